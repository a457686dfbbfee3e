/* Oracle API docs: renders /openapi.json (paths, methods, parameters, request and response schemas).
 * Self-contained; all text from the schema is inserted with textContent, never as HTML. */
(() => {
  'use strict';

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') el.textContent = String(v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    const add = (c) => {
      if (c === null || c === undefined || c === false) return;
      if (Array.isArray(c)) c.forEach(add);
      else if (c instanceof Node) el.appendChild(c);
      else el.appendChild(document.createTextNode(String(c)));
    };
    children.forEach(add);
    return el;
  }

  const $ = (sel) => document.querySelector(sel);
  const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'];
  let spec = null;

  function refName(ref) {
    return typeof ref === 'string' ? ref.split('/').pop() : '';
  }

  function resolve(schema) {
    let seen = 0;
    while (schema && schema.$ref && seen++ < 20) {
      schema = (spec.components && spec.components.schemas || {})[refName(schema.$ref)] || {};
    }
    return schema || {};
  }

  /** A short type expression: string, integer, array<Hit>, string | null, "a" | "b"; $refs by name. */
  function typeOf(schema) {
    if (!schema || typeof schema !== 'object') return 'any';
    if (schema.$ref) return refName(schema.$ref);
    if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
    if (schema.const !== undefined) return JSON.stringify(schema.const);
    for (const key of ['anyOf', 'oneOf']) {
      if (Array.isArray(schema[key])) return schema[key].map(typeOf).join(' | ');
    }
    if (Array.isArray(schema.allOf)) return schema.allOf.map(typeOf).join(' & ');
    if (schema.type === 'array') return 'array<' + typeOf(schema.items) + '>';
    if (schema.type === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
      return 'object<string, ' + typeOf(schema.additionalProperties) + '>';
    }
    if (Array.isArray(schema.type)) return schema.type.join(' | ');
    return schema.type || 'any';
  }

  /** Constraints of a schema and of its anyOf branches (e.g. maxLength on string | null). */
  function constraints(schema) {
    const out = [];
    const walk = (sc) => {
      if (!sc || typeof sc !== 'object' || sc.$ref) return;
      const pairs = [
        ['minimum', '≥ '], ['exclusiveMinimum', '> '], ['maximum', '≤ '], ['exclusiveMaximum', '< '],
        ['minLength', 'min length '], ['maxLength', 'max length '], ['minItems', 'min items '],
        ['maxItems', 'max items '], ['pattern', 'pattern '], ['format', 'format '],
      ];
      for (const [key, label] of pairs) if (sc[key] !== undefined) out.push(label + sc[key]);
      for (const key of ['anyOf', 'oneOf', 'allOf']) if (Array.isArray(sc[key])) sc[key].forEach(walk);
      if (sc.type === 'array' && sc.items) {
        const inner = [];
        const save = out.length;
        walk(sc.items);
        inner.push(...out.splice(save));
        inner.forEach((c) => out.push('each ' + c));
      }
    };
    walk(schema);
    return out;
  }

  function constraintCell(schema, extraDefault) {
    const list = constraints(schema);
    const def = schema && schema.default !== undefined ? schema.default : extraDefault;
    if (def !== undefined) list.push('default ' + JSON.stringify(def));
    return h('td', { class: 'constraints' }, list.map((c) => h('span', { class: 'constraint', text: c })));
  }

  function schemaLink(name) {
    return h('a', { class: 'schema-name', href: '#schema-' + name, text: name });
  }

  function typeCell(schema) {
    const td = h('td', { class: 'type' });
    // Link component names that appear in the expression.
    const text = typeOf(schema);
    const names = Object.keys((spec.components && spec.components.schemas) || {});
    const parts = text.split(/([A-Za-z_][A-Za-z0-9_]*)/);
    for (const part of parts) {
      if (names.includes(part)) td.appendChild(schemaLink(part));
      else if (part) td.appendChild(document.createTextNode(part));
    }
    return td;
  }

  function paramTable(params) {
    return h('table', { class: 'fields params' },
      h('thead', null, h('tr', null, ['name', 'in', 'type', 'required', 'constraints', 'description'].map((t) => h('th', { text: t })))),
      h('tbody', null, params.map((p) => {
        const schema = p.schema || {};
        return h('tr', { 'data-param': p.name, 'data-in': p.in, 'data-required': p.required ? 'true' : 'false' },
          h('td', { class: 'name', text: p.name }),
          h('td', { text: p.in }),
          typeCell(schema),
          h('td', null, p.required ? h('span', { class: 'req', text: 'required' }) : h('span', { class: 'opt', text: 'optional' })),
          constraintCell(schema),
          h('td', { text: p.description || schema.description || '' }));
      })));
  }

  function fieldsTable(schema) {
    const props = schema.properties || {};
    const required = new Set(schema.required || []);
    return h('table', { class: 'fields' },
      h('thead', null, h('tr', null, ['field', 'type', 'required', 'constraints', 'description'].map((t) => h('th', { text: t })))),
      h('tbody', null, Object.entries(props).map(([name, sc]) =>
        h('tr', { 'data-field': name },
          h('td', { class: 'name', text: name }),
          typeCell(sc),
          h('td', null, required.has(name) ? h('span', { class: 'req', text: 'required' }) : h('span', { class: 'opt', text: 'optional' })),
          constraintCell(sc),
          h('td', { text: sc.description || '' })))));
  }

  function contentSchema(content) {
    if (!content) return null;
    const json = content['application/json'] || Object.values(content)[0];
    return json && json.schema ? json.schema : null;
  }

  function operation(path, method, op) {
    const params = op.parameters || [];
    const body = op.requestBody;
    const bodySchema = body ? contentSchema(body.content) : null;
    const anchor = 'op-' + method + '-' + path.replace(/[^A-Za-z0-9]+/g, '-');
    return h('section', { class: 'card op', id: anchor, 'data-path': path, 'data-method': method },
      h('header', null,
        h('span', { class: 'method ' + method, text: method }),
        h('span', { class: 'path', text: path }),
        h('span', { class: 'summary', text: op.summary || '' })),
      op.description ? h('p', { class: 'muted', text: op.description }) : null,
      h('h3', { text: 'Parameters' }),
      params.length ? paramTable(params) : h('p', { class: 'muted', text: 'none' }),
      bodySchema ? [
        h('h3', { text: 'Request body' + (body.required ? ' (required)' : '') }),
        h('p', { class: 'request-body' }, 'JSON ', Array.from(typeCell(bodySchema).childNodes)),
        resolve(bodySchema).properties ? fieldsTable(resolve(bodySchema)) : null,
      ] : null,
      h('h3', { text: 'Responses' }),
      h('ul', { class: 'responses' }, Object.entries(op.responses || {}).map(([status, resp]) => {
        const sc = contentSchema(resp.content);
        return h('li', { 'data-status': status },
          h('span', { class: 'status-code', text: status }),
          sc ? h('span', { class: 'response-schema' }, Array.from(typeCell(sc).childNodes)) : h('span', { class: 'muted', text: 'no body' }),
          h('span', { class: 'muted', text: resp.description || '' }));
      })));
  }

  function render() {
    const info = spec.info || {};
    $('#api-title').textContent = (info.title || 'API') + ' API';
    $('#api-version').textContent = info.version ? 'v' + info.version + ' · OpenAPI ' + (spec.openapi || '') : '';
    $('#api-description').textContent = info.description || '';
    document.title = (info.title || 'API') + ' API docs';
    const toc = $('#toc');
    const endpoints = $('#endpoints');
    for (const [path, item] of Object.entries(spec.paths || {})) {
      for (const method of METHODS) {
        if (!item[method]) continue;
        const el = operation(path, method, item[method]);
        endpoints.appendChild(el);
        toc.appendChild(h('a', { href: '#' + el.id, text: method.toUpperCase() + ' ' + path }));
      }
    }
    const list = $('#schema-list');
    for (const [name, schema] of Object.entries((spec.components && spec.components.schemas) || {})) {
      list.appendChild(h('section', { class: 'card op schema', id: 'schema-' + name, 'data-schema': name },
        h('header', null, h('span', { class: 'path', text: name }), h('span', { class: 'summary', text: schema.description || '' })),
        schema.properties ? fieldsTable(schema) : h('p', { class: 'mono', text: typeOf(schema) })));
    }
    if (location.hash) {
      const target = document.getElementById(location.hash.slice(1));
      if (target) target.scrollIntoView();
    }
    document.body.setAttribute('data-ready', '1');
  }

  async function start() {
    try {
      const headers = { Accept: 'application/json' };
      let token = null;
      try { token = sessionStorage.getItem('oracle-token'); } catch (_) { token = null; }
      if (token) headers.Authorization = 'Bearer ' + token;
      const res = await fetch('/openapi.json', { headers });
      if (res.status === 401) throw new Error('this server needs its access token: open the dashboard (/) in this tab and enter it first');
      if (!res.ok) throw new Error('HTTP ' + res.status);
      spec = await res.json();
      render();
    } catch (err) {
      const box = $('#docs-error');
      box.textContent = 'Could not load /openapi.json: ' + err.message;
      box.hidden = false;
      document.body.setAttribute('data-ready', 'error');
    }
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
