/* Oracle dashboard: plain JS, no framework, no request to any other host.
 *
 * Every piece of text from the API reaches the page through textContent / createTextNode or
 * setAttribute (never innerHTML), so a note containing <script> or markup shows as text.
 * Charts are inline SVG drawn by the small functions below; the concept graph uses a simple
 * deterministic force layout (same data, same picture).
 */
(() => {
  'use strict';

  const SVG_NS = 'http://www.w3.org/2000/svg';
  const DAYS = 30;
  const HOURS = 48;  // the logs API's per_hour span
  const SEARCH_LIMIT = 10;
  const MAX_GRAPH_DOCUMENTS = 160;  // the API draws at most 60 (server/services/browse.py); a guard for an older server
  const MAX_CONCEPT_EDGES = 80;  // the heaviest co-occurrences only: 160 of 40 concepts were a hairball
  const REFRESH_MS = 60000;

  // -- DOM helpers (text only) --------------------------------------------------------------------
  function setAttrs(el, attrs) {
    if (!attrs) return el;
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'text') el.textContent = String(value);
      else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? '' : String(value));
    }
    return el;
  }

  function append(el, children) {
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) append(el, child);
      else if (child instanceof Node) el.appendChild(child);
      else el.appendChild(document.createTextNode(String(child)));
    }
    return el;
  }

  /** An HTML element; string children become text nodes. */
  function h(tag, attrs, ...children) {
    return append(setAttrs(document.createElement(tag), attrs), children);
  }

  /** An SVG element; string children become text nodes. */
  function s(tag, attrs, ...children) {
    return append(setAttrs(document.createElementNS(SVG_NS, tag), attrs), children);
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  const $ = (sel) => document.querySelector(sel);

  // -- API ----------------------------------------------------------------------------------------
  // With ORACLE_TOKEN set, every API route needs `Authorization: Bearer <token>`. The dashboard asks for it
  // once (a form, not a prompt) and keeps it in this tab's sessionStorage; calls that got a 401 wait for it.
  const TOKEN_KEY = 'oracle-token';
  let tokenWait = null;

  function savedToken() {
    try { return sessionStorage.getItem(TOKEN_KEY); } catch (_) { return null; }
  }

  function askToken(message) {
    if (tokenWait) return tokenWait;
    tokenWait = new Promise((resolve) => {
      const box = $('#token-box');
      const input = $('#token-input');
      $('#token-note').textContent = message;
      box.hidden = false;
      input.focus();
      function submit(event) {
        event.preventDefault();
        const value = input.value.trim();
        if (!value) return;
        try { sessionStorage.setItem(TOKEN_KEY, value); } catch (_) { /* private mode: this page only */ }
        input.value = '';
        box.hidden = true;
        box.removeEventListener('submit', submit);
        tokenWait = null;
        resolve(value);
      }
      box.addEventListener('submit', submit);
    });
    return tokenWait;
  }

  async function api(path, params) {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (Array.isArray(v)) v.forEach((item) => qs.append(k, String(item)));  // repeated: variants=a&variants=b
      else if (v !== null && v !== undefined && v !== '') qs.append(k, String(v));
    }
    const url = path + (qs.toString() ? '?' + qs.toString() : '');
    let res;
    let token = savedToken();
    for (;;) {
      const headers = { Accept: 'application/json' };
      if (token) headers.Authorization = 'Bearer ' + token;
      try {
        res = await fetch(url, { headers, credentials: 'same-origin' });
      } catch (err) {
        throw new Error('the server did not answer (' + err.message + ')');
      }
      if (res.status !== 401) break;
      if (token && savedToken() === token) {
        try { sessionStorage.removeItem(TOKEN_KEY); } catch (_) { /* nothing kept */ }
      }
      const fresh = savedToken();  // another call may have been given the token meanwhile
      token = fresh && fresh !== token ? fresh : await askToken(token
        ? 'That token was refused. Enter the access token (ORACLE_TOKEN) again.'
        : 'This server needs its access token (ORACLE_TOKEN).');
    }
    let body = null;
    try { body = await res.json(); } catch (_) { body = null; }
    if (!res.ok) {
      const msg = body && typeof body.error === 'string' ? body.error : 'HTTP ' + res.status;
      throw new Error(msg);
    }
    return body;
  }

  // -- formatting ---------------------------------------------------------------------------------
  const num = (n) => (typeof n === 'number' && isFinite(n) ? n : 0);
  const ms = (v) => (v === null || v === undefined ? '–' : (v < 10 ? v.toFixed(1) : Math.round(v).toString()) + ' ms');
  const plural = (n, one, many) => n + ' ' + (n === 1 ? one : (many || one + 's'));

  function ago(date) {
    const sec = Math.round((Date.now() - date.getTime()) / 1000);
    if (sec < 45) return 'just now';
    const min = Math.round(sec / 60);
    if (min < 60) return min + ' min ago';
    const hrs = Math.round(min / 60);
    if (hrs < 36) return plural(hrs, 'hour') + ' ago';
    return plural(Math.round(hrs / 24), 'day') + ' ago';
  }

  function localTime(date) {
    const pad = (n) => String(n).padStart(2, '0');
    return date.getFullYear() + '-' + pad(date.getMonth() + 1) + '-' + pad(date.getDate()) + ' ' +
      pad(date.getHours()) + ':' + pad(date.getMinutes());
  }

  function typeClass(type) {
    return ['principle', 'learning', 'retro'].includes(type) ? type : 'other';
  }

  // -- overview tiles -------------------------------------------------------------------------------
  function setStat(key, text, raw) {
    for (const el of document.querySelectorAll('[data-stat="' + key + '"]')) {
      el.textContent = text;
      el.setAttribute('data-value', raw === null || raw === undefined ? '' : String(raw));
      el.setAttribute('title', text);
    }
  }

  function typeList(target, counts, prefix) {
    clear(target);
    for (const [type, n] of Object.entries(counts || {})) {
      target.appendChild(h('li', null,
        h('i', { class: 'dot ' + typeClass(type) }),
        h('span', { text: type }),
        h('span', { class: 'n', 'data-stat': prefix + '.' + type, 'data-value': n, text: String(n) })));
    }
  }

  function tileState(id, state) {
    const tile = document.getElementById(id);
    tile.classList.remove('good', 'bad', 'warn');
    if (state) tile.classList.add(state);
  }

  function renderStats(st) {
    $('#version').textContent = 'v' + st.version;
    setStat('documents.total', String(st.documents.total), st.documents.total);
    typeList($('#documents-by-type'), st.documents.by_type, 'documents.by_type');
    setStat('files.total', String(st.files.total), st.files.total);
    typeList($('#files-by-type'), st.files.by_type, 'files.by_type');
    setStat('concepts', String(st.concepts), st.concepts);

    const fr = st.freshness || { stale: 0, stale_by_type: {}, window_days: {} };
    setStat('freshness.stale', String(fr.stale), fr.stale);
    typeList($('#stale-by-type'), fr.stale_by_type, 'freshness.stale_by_type');
    const windows = Object.entries(fr.window_days || {}).map(([t, n]) => t + ' ' + n + ' d');
    $('#stale-sub').textContent = windows.length ? 'past their window: ' + windows.join(', ')
      : 'no [freshness] days in oracle.toml; review_after dates only';
    tileState('tile-stale', fr.stale ? 'warn' : 'good');

    const cov = num(st.embeddings.coverage);
    setStat('embeddings.coverage', (cov * 100).toFixed(1) + '%', cov);
    $('#coverage-meter').style.width = Math.max(0, Math.min(100, cov * 100)) + '%';
    $('#embeddings-sub').textContent = st.embeddings.embedded_chunks + ' of ' + st.documents.total + ' sections embedded';
    tileState('tile-embeddings', cov >= 0.999 ? 'good' : cov >= 0.5 ? 'warn' : 'bad');

    const d = st.drift;
    if (d.in_sync) {
      setStat('drift', 'in sync', 'in_sync');
      $('#drift-sub').textContent = 'index matches the notes on disk';
      $('#drift-sub').removeAttribute('title');
      tileState('tile-drift', 'good');
    } else {
      const parts = [];
      if (d.not_indexed_count) parts.push(d.not_indexed_count + ' not indexed');
      if (d.changed_since_index_count) parts.push(d.changed_since_index_count + ' changed');
      if (d.vanished_count) parts.push(d.vanished_count + ' vanished');
      setStat('drift', parts.join(', '), 'drift');
      const files = [...d.not_indexed, ...d.changed_since_index, ...d.vanished];
      $('#drift-sub').textContent = files.length ? files.slice(0, 3).join(', ') + (files.length > 3 ? ', …' : '') : '';
      $('#drift-sub').setAttribute('title', files.join('\n'));
      tileState('tile-drift', 'warn');
    }

    // The team store (issue 38): this folder is a working copy; conflict copies a sync wrote are shown here.
    // In an outage (issue 38, item 3) the engine serves the working copy's own index, and the tile says so.
    const wc = st.working_copy;
    const link = st.team_link && st.team_link.serving ? st.team_link : null;  // {} without the team store
    const team = document.getElementById('tile-team');
    team.hidden = !wc && !link;
    layoutTiles();
    if (link && link.serving === 'working copy') {
      setStat('working_copy.conflicts', 'database unreachable', 'offline');
      $('#team-sub').textContent = 'serving the working copy since ' + localTime(new Date(link.offline_since))
        + ': ' + link.reason + '; writes stay files and are sent when it is back';
      $('#team-sub').setAttribute('title', link.mark);
      tileState('tile-team', 'bad');
    } else if (wc) {
      setStat('working_copy.conflicts', wc.conflicts ? wc.conflicts + ' conflict' + (wc.conflicts === 1 ? '' : 's')
        : 'no conflicts', wc.conflicts);
      const recent = (wc.recent_conflicts || []).map((c) => c.path + ' → ' + c.copy + (c.author ? ' (' + c.author + ')' : ''));
      $('#team-sub').textContent = wc.notes + ' notes, ' + wc.tombstones + ' deleted, ' + wc.revisions + ' revisions'
        + (recent.length ? '; latest: ' + recent[0] : '');
      $('#team-sub').setAttribute('title', recent.join('\n'));
      tileState('tile-team', wc.conflicts ? 'warn' : 'good');
    }

    const vs = st.vector_store;
    setStat('vector_store', vs.ok ? 'ok' : 'down', vs.ok ? 'ok' : 'down');
    $('#vector-detail').textContent = vs.detail;
    $('#vector-detail').setAttribute('title', vs.detail);
    tileState('tile-vectors', vs.ok ? 'good' : 'bad');

    if (st.last_indexed) {
      const when = new Date(st.last_indexed);
      setStat('last_indexed', ago(when), st.last_indexed);
      $('#indexed-sub').textContent = localTime(when);
      $('#indexed-sub').setAttribute('title', st.last_indexed);
    } else {
      setStat('last_indexed', 'never', '');
      $('#indexed-sub').textContent = 'run `oracle index`';
    }

    const u = st.usage;
    setStat('usage.search_p50_ms', ms(u.search_p50_ms), u.search_p50_ms);
    setStat('usage.search_p95_ms', ms(u.search_p95_ms), u.search_p95_ms);
    setStat('usage.searches', String(u.searches), u.searches);
    // Searches that loaded the model first (a stdio session's first, a lone CLI search): apart from the warm ones.
    setStat('usage.search_cold_starts', u.search_cold_starts
      ? u.search_cold_starts + ' · p50 ' + ms(u.search_cold_p50_ms) : '0', u.search_cold_starts);
  }

  // -- charts ---------------------------------------------------------------------------------------
  function percentileOf(values, q) {
    if (!values.length) return 0;
    const sorted = values.slice().sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.round(q * (sorted.length - 1)))];
  }

  function niceMax(v) {
    if (v <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  function lastDays(n) {
    const out = [];
    const today = new Date();
    const base = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
    for (let i = n - 1; i >= 0; i--) out.push(new Date(base - i * 86400000).toISOString().slice(0, 10));
    return out;
  }

  /** The last n UTC hours as "YYYY-MM-DDTHH", oldest first (the keys of the logs' per_hour). */
  function lastHours(n) {
    const out = [];
    const base = Math.floor(Date.now() / 3600000) * 3600000;
    for (let i = n - 1; i >= 0; i--) out.push(new Date(base - i * 3600000).toISOString().slice(0, 13));
    return out;
  }

  /** Grouped bars per slot (a day "YYYY-MM-DD" or an hour "YYYY-MM-DDTHH") for several series:
   * [{name, names, cls, counts: {slot: n}}]; `label` turns a slot into its axis text. */
  function slotBars(target, slots, series, unit, label) {
    const W = 520, H = 150, L = 30, R = 6, T = 8, B = 22;
    const max = niceMax(Math.max(1, ...series.flatMap((sr) => slots.map((d) => sr.counts[d] || 0))));
    const slot = (W - L - R) / slots.length;
    const bw = Math.max(1.5, (slot - 3) / series.length);
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'per-' + unit + ' counts', 'data-unit': unit });
    for (const frac of [0, 0.5, 1]) {
      const v = max * frac;
      svg.appendChild(s('line', { class: frac === 0 ? 'axis' : 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      svg.appendChild(s('text', { x: L - 5, y: y(v) + 3, 'text-anchor': 'end' }, Number.isInteger(v) ? String(v) : v.toFixed(1)));
    }
    slots.forEach((key, i) => {
      series.forEach((sr, j) => {
        const v = sr.counts[key] || 0;
        if (!v) return;
        const x = L + i * slot + 1.5 + j * bw;
        svg.appendChild(s('rect', { class: sr.cls, x: x.toFixed(1), y: y(v).toFixed(1), width: bw.toFixed(1),
          height: Math.max(1, H - B - y(v)).toFixed(1), rx: 1, 'data-slot': key },
        s('title', null, (unit === 'hour' ? key.replace('T', ' ') + ':00 UTC' : key) + ': ' + plural(v, sr.name, sr.names))));
      });
    });
    for (const i of [0, Math.floor(slots.length / 2), slots.length - 1]) {
      svg.appendChild(s('text', { x: L + i * slot + slot / 2, y: H - 6, 'text-anchor': 'middle' }, label(slots[i])));
    }
    clear(target).appendChild(svg);
  }

  /** Hours when every logged day is today or yesterday (UTC): one or two days of use would be one or two
   * bars; otherwise days. */
  function activityScale(logs) {
    const perDay = [...(logs.per_day.searches || []), ...(logs.per_day.consultations || [])];
    const yesterday = lastDays(2)[0];
    if (logs.per_hour && perDay.length && perDay.every((r) => r.day >= yesterday)) {
      return { unit: 'hour', slots: lastHours(HOURS), rows: logs.per_hour, key: 'hour', span: HOURS + ' hours',
        label: (k) => k.slice(5, 10) + ' ' + k.slice(11) + 'h' };
    }
    return { unit: 'day', slots: lastDays(DAYS), rows: logs.per_day, key: 'day', span: DAYS + ' days',
      label: (k) => k.slice(5) };
  }

  function renderActivity(logs) {
    const scale = activityScale(logs);
    const toCounts = (rows) => Object.fromEntries((rows || []).map((r) => [r[scale.key], r.count]));
    const searches = toCounts(scale.rows.searches);
    const consultations = toCounts(scale.rows.consultations);
    const sum = (c) => scale.slots.reduce((a, d) => a + (c[d] || 0), 0);
    $('#activity-total').textContent = plural(sum(searches), 'search', 'searches') + ' · ' +
      plural(sum(consultations), 'consultation') + ' in ' + scale.span;
    slotBars($('#chart-activity'), scale.slots, [
      { name: 'search', names: 'searches', cls: 'bar-searches', counts: searches },
      { name: 'consultation', cls: 'bar-consultations', counts: consultations },
    ], scale.unit, scale.label);
  }

  /** Latency of recent warm searches (oldest left) with the warm p50/p95 of the log as reference lines; cold
   * starts (the search loaded the model first) are counted in the tile, not drawn among the warm ones. */
  function renderLatency(logs, usage) {
    const target = $('#chart-latency');
    const rows = (logs.searches || []).filter((r) => typeof r.latency_ms === 'number' && !r.cold).slice().reverse();
    $('#latency-samples').textContent = rows.length ? 'last ' + plural(rows.length, 'warm search', 'warm searches') : '';
    if (!rows.length) {
      clear(target).appendChild(h('div', { class: 'empty', text: 'No searches logged yet.' }));
      return;
    }
    const W = 520, H = 140, L = 38, R = 34, T = 8, B = 16;
    const refs = [usage.search_p50_ms, usage.search_p95_ms].filter((v) => typeof v === 'number');
    const values = rows.map((r) => r.latency_ms);
    // A cold first search (model load) can be 20x the rest: cap the scale so the typical ones stay
    // readable, and draw the points above the cap at the top edge, marked, with their real value.
    const typical = Math.max(percentileOf(values, 0.9), typeof usage.search_p50_ms === 'number' ? usage.search_p50_ms : 0, 1);
    const max = niceMax(Math.min(Math.max(...values, ...refs, 1), typical * 1.6));
    const x = (i) => L + (rows.length === 1 ? (W - L - R) / 2 : i * (W - L - R) / (rows.length - 1));
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'search latency per search' });
    for (const frac of [0, 0.5, 1]) {
      const v = max * frac;
      svg.appendChild(s('line', { class: frac === 0 ? 'axis' : 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      svg.appendChild(s('text', { x: L - 5, y: y(v) + 3, 'text-anchor': 'end' }, Math.round(v) + ' ms'));
    }
    for (const [key, cls] of [['search_p50_ms', 'p50'], ['search_p95_ms', 'p95']]) {
      const v = usage[key];
      if (typeof v !== 'number') continue;
      const off = v > max;  // above the scale: pinned to the top edge, marked with an arrow
      svg.appendChild(s('line', { class: cls, x1: L, x2: W - R, y1: y(Math.min(v, max)), y2: y(Math.min(v, max)) },
        s('title', null, cls + ' ' + ms(v))));
      svg.appendChild(s('text', { class: cls, x: W - R + 4, y: y(Math.min(v, max)) + (off ? 9 : 3) }, cls + (off ? ' ↑' : '')));
    }
    const pts = rows.map((r, i) => x(i).toFixed(1) + ',' + y(Math.min(r.latency_ms, max)).toFixed(1));
    svg.appendChild(s('polyline', { class: 'line', points: pts.join(' ') }));
    rows.forEach((r, i) => {
      const when = new Date(r.at * 1000);
      const clipped = r.latency_ms > max;
      svg.appendChild(s('circle', { class: 'pt' + (clipped ? ' clipped' : ''), cx: x(i).toFixed(1),
        cy: y(Math.min(r.latency_ms, max)).toFixed(1), r: clipped ? 3.4 : 2.6 },
        s('title', null, ms(r.latency_ms) + ' · ' + localTime(when) + ' · ' + (r.mode || '') + '\n' + (r.query || ''))));
    });
    svg.appendChild(s('text', { x: L, y: H - 2 }, 'older'));
    svg.appendChild(s('text', { x: W - R, y: H - 2, 'text-anchor': 'end' }, 'newest'));
    clear(target).appendChild(svg);
  }

  function renderConcepts(result) {
    const target = $('#chart-concepts');
    const rows = result.concepts.slice(0, 12);
    $('#concepts-total').textContent = result.total + ' in all';
    if (!rows.length) {
      clear(target).appendChild(h('div', { class: 'empty', text: 'No concepts yet.' }));
      return;
    }
    const W = 520, rowH = 19, L = 130, R = 34;
    const H = rows.length * rowH + 4;
    const max = Math.max(...rows.map((r) => r.count));
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'top concepts' });
    rows.forEach((r, i) => {
      const y0 = 2 + i * rowH;
      const w = Math.max(2, (W - L - R) * r.count / max);
      const label = r.concept.length > 20 ? r.concept.slice(0, 19) + '…' : r.concept;
      svg.appendChild(s('g', { class: 'concept-row', 'data-concept': r.concept, onclick: () => runSearch(r.concept) },
        s('title', null, r.concept + ': ' + 'in ' + plural(r.count, 'note') + ' (click to search)'),
        s('text', { class: 'label', x: L - 8, y: y0 + rowH / 2 + 4, 'text-anchor': 'end' }, label),
        s('rect', { class: 'bar-concept', x: L, y: y0 + 3, width: w.toFixed(1), height: rowH - 6, rx: 2 }),
        s('text', { x: L + w + 5, y: y0 + rowH / 2 + 4 }, String(r.count))));
    });
    clear(target).appendChild(svg);
  }

  // -- recent consultations --------------------------------------------------------------------------
  function renderConsultations(logs) {
    const target = clear($('#consultations'));
    const rows = logs.consultations || [];
    $('#consultations-total').textContent = rows.length ? 'latest ' + rows.length : '';
    if (!rows.length) {
      target.appendChild(h('div', { class: 'empty', text: 'No consultations yet. Agents consult before a decision (oracle_consult, /api/consult).' }));
      return;
    }
    for (const r of rows) {
      const when = new Date(r.at * 1000);
      const found = Array.isArray(r.found) ? r.found : [];
      target.appendChild(h('details', { class: 'consult', 'data-consult': r.id },
        h('summary', null,
          h('span', { class: 'decision', text: r.decision || '' }),
          h('span', { class: 'meta', title: localTime(when) },
            ago(when) + ' · ' + plural(found.length, 'source') + ' · ' + plural(r.tokens || 0, 'token') +
            (r.client ? ' · ' + r.client : ''))),
        h('div', { class: 'body' },
          r.context ? h('p', { class: 'muted' }, 'Context: ', r.context) : null,
          r.working_set_id ? h('p', { class: 'muted working-set', 'data-working-set': r.working_set_id },
            'Working set ', h('code', { text: r.working_set_id })) : null,
          found.length ? h('div', { class: 'sources' }, found.map((f) =>
            h('span', { class: 'chip', title: 'sha256 ' + (f.content_hash || '') },
              h('i', { class: 'dot ' + typeClass(f.type) }), h('b', { text: f.id }),
              typeof f.score === 'number' ? f.score.toFixed(4) : ''))) : null,
          h('pre', { class: 'guidance', text: r.guidance || '' }))));
    }
  }

  /** Learnings, verdicts, supersessions, edits and archives, newest first, each with who made it: the named
   * token's name in team mode (server/services/team.py), else the client. */
  /** The stat cards in even rows: 8 cards are 2 rows of 4 and 9 (with the team card) 3 of 3, never a row of 7 and
   * a lone eighth (issue 40). The count sets --tile-cols; narrow screens use two columns (app.css). */
  function layoutTiles() {
    const tiles = document.querySelector('.tiles');
    const n = [...tiles.children].filter((t) => !t.hidden).length;
    const cols = n <= 5 ? n : n % 4 === 0 ? 4 : n % 3 === 0 ? 3 : n % 5 === 0 ? 5 : Math.ceil(n / 2);
    tiles.style.setProperty('--tile-cols', String(Math.max(cols, 1)));
  }

  function renderWrites(logs) {
    // A write names its note by a section id or a path; the server resolves both to the note's title (logs.titles),
    // so the list reads as titles; a note since deleted keeps its bare ref.
    const titles = logs.titles || {};
    const titleOf = (ref) => (ref && titles[ref] ? titles[ref].title : ref);
    const fileOf = (ref) => (ref && titles[ref] ? titles[ref].file : null);
    const rows = [];
    for (const r of logs.learnings || []) rows.push({ at: r.at, who: r.author, client: r.client, what: 'learned', file: r.file, detail: r.title || titleOf(r.file) });
    for (const r of logs.feedback || []) rows.push({ at: r.at, who: r.author, client: r.client, what: 'marked ' + r.verdict, file: fileOf(r.doc_id), detail: titleOf(r.doc_id) });
    for (const r of logs.supersessions || []) rows.push({ at: r.at, who: r.author, client: r.client, what: r.action === 'revoke' ? 'revoked supersession of' : 'superseded', file: fileOf(r.old_ref), detail: titleOf(r.old_ref) + (r.new_ref ? ' → ' + titleOf(r.new_ref) : '') });
    for (const r of logs.edits || []) rows.push({ at: r.at, who: r.author, client: r.client, what: r.action === 'archive' ? 'archived' : 'edited (' + String(r.action).replace('edit:', '') + ')', file: r.action === 'archive' ? null : r.file, detail: r.action === 'archive' ? titleOf(r.file) + ' → ' + r.moved_to : titleOf(r.file) });
    rows.sort((a, b) => b.at - a.at);
    const target = clear($('#writes'));
    $('#writes-total').textContent = rows.length ? 'latest ' + Math.min(rows.length, 30) : '';
    if (!rows.length) target.appendChild(h('li', { class: 'empty', text: 'Nothing written yet (learn, feedback, supersede, edit, archive).' }));
    for (const r of rows.slice(0, 30)) {
      const when = new Date(r.at * 1000);
      const li = noteItem(r.file, (r.who || r.client || 'someone') + ' ' + r.what + ' ' + (r.detail || ''), ago(when),
        { 'data-author': r.who || '' });
      li.setAttribute('title', localTime(when));
      target.appendChild(li);
    }
  }

  function renderRecentQueries(logs) {
    const seen = new Set();
    const queries = [];
    for (const r of logs.searches || []) {
      const q = (r.query || '').trim();
      if (!q || q.length > 120 || seen.has(q.toLowerCase())) continue;
      seen.add(q.toLowerCase());
      queries.push(q);
      if (queries.length >= 10) break;
    }
    const box = clear($('#suggestions'));
    for (const q of queries) {
      box.appendChild(h('button', { type: 'button', class: 'suggestion', title: q, text: q, onclick: () => runSearch(q) }));
    }
    $('#recent-queries').hidden = !queries.length;
  }

  // -- search ---------------------------------------------------------------------------------------
  const searchState = { query: '', type: 'all', mode: 'hybrid', offset: 0, maxScore: 0, seq: 0, variants: [] };

  function chip(label, value, off) {
    return h('span', { class: 'chip' + (off ? ' off' : '') }, label, ' ', h('b', { text: value }));
  }

  function resultItem(hit, rank) {
    const bd = hit.breakdown || {};
    const rel = searchState.maxScore > 0 ? Math.max(0.04, hit.score / searchState.maxScore) : 0;
    const li = h('li', {
      class: 'result', 'data-id': hit.id, tabindex: 0, role: 'button',
      'aria-label': 'Open ' + hit.source_file + ' lines ' + hit.line_start + '-' + hit.line_end,
    },
      h('div', { class: 'head' },
        h('span', { class: 'rank', text: rank + '.' }),
        h('span', { class: 'badge ' + typeClass(hit.type), text: hit.type }),
        h('span', { class: 'title', text: hit.title || '(untitled)' }),
        hit.heading ? h('span', { class: 'heading', text: '› ' + hit.heading }) : null),
      h('div', { class: 'where' },
        h('code', { class: 'loc', text: hit.source_file + ':' + hit.line_start + '-' + hit.line_end }),
        hit.date ? h('span', { text: hit.date }) : null,
        hit.project ? h('span', { text: 'project ' + hit.project }) : null,
        hit.also_in_file && hit.also_in_file.length ? h('span', { text: '+' + hit.also_in_file.length + ' more sections' }) : null,
        (hit.duplicates || []).length ? h('span', { text: 'same content in ' + hit.duplicates.length + ' more' }) : null,
        hit.weak ? h('span', { class: 'weak', 'data-weak': '', text: 'weak match' }) : null,
        hit.phrasings ? h('span', { class: 'found-by', 'data-phrasings': hit.phrasings.join(','),
          text: 'found by ' + hit.phrasings.map((p) => (p === 0 ? 'query' : 'phrasing ' + p)).join(' + ') }) : null),
      hit.superseded_by ? h('div', { class: 'superseded', 'data-superseded-by': hit.superseded_by.source_file },
        'Superseded by ', h('code', { text: hit.superseded_by.source_file }),
        hit.superseded_by.reason ? ' — ' + hit.superseded_by.reason : '') : null,
      hit.stale ? h('div', { class: 'superseded stale', 'data-stale-since': hit.stale_since || '' },
        'Stale since ' + (hit.stale_since || '?') + ' — last verified ' + (hit.last_verified || 'never')) : null,
      (hit.relations || []).length ? h('div', { class: 'relations' }, hit.relations.map((t) =>
        h('span', { class: 'chip relation', text: t.subject + ' — ' + t.predicate + ' — ' + t.object }))) : null,
      h('p', { class: 'snippet', text: hit.snippet || '' }),
      h('div', { class: 'breakdown', 'data-breakdown': '' },
        h('span', { class: 'scorebar', title: 'score relative to the best hit' }, h('span')),
        // The note's score, the one that ranks it; the leading section's own fused score is in the tooltip.
        h('span', { class: 'chip', 'data-score': '', title: 'the note\'s score (what ranks it); its leading section: fused '
          + num(bd.fused ?? hit.score).toFixed(4) + ', relevance ' + num(bd.relevance ?? hit.score).toFixed(4) },
          'score ', h('b', { text: num(hit.score).toFixed(4) })),
        hit.lang ? chip('lang', hit.lang + ((hit.translations || []).length ? ' +' + hit.translations.length + ' translations' : '')) : null,
        chip('bm25', bd.bm25_rank == null ? '—' : '#' + bd.bm25_rank + ' · ' + num(bd.bm25_score).toFixed(2), bd.bm25_rank == null),
        chip('vector', bd.vector_rank == null ? '—' : '#' + bd.vector_rank + ' · ' + num(bd.vector_similarity).toFixed(3), bd.vector_rank == null),
        chip('found by', (hit.found_by || []).join(' + ') || '—'),
        bd.helpful || bd.misleading ? chip('feedback', '+' + bd.helpful + ' / −' + bd.misleading + ' · ×' + num(bd.feedback_factor).toFixed(3)) : null,
        bd.superseded_factor != null && bd.superseded_factor !== 1 ? chip('superseded', '×' + num(bd.superseded_factor).toFixed(2)) : null,
        bd.language_factor != null && bd.language_factor !== 1 ? chip('other language', '×' + num(bd.language_factor).toFixed(2)) : null));
    li.querySelector('.scorebar > span').style.width = (rel * 100).toFixed(0) + '%';
    const open = () => {
      for (const el of document.querySelectorAll('#results .result.active')) el.classList.remove('active');
      li.classList.add('active');
      openViewer({ path: hit.source_file, start: hit.line_start, end: hit.line_end, title: hit.title,
        heading: hit.heading, type: hit.type, id: hit.id, hash: hit.content_hash });
    };
    li.addEventListener('click', open);
    li.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); open(); }
    });
    return li;
  }

  async function doSearch(appendMode) {
    const status = $('#search-status');
    const results = $('#results');
    const more = $('#more');
    const seq = ++searchState.seq;
    if (!appendMode) {
      searchState.offset = 0;
      clear(results);
    }
    results.setAttribute('data-state', 'loading');
    more.hidden = true;
    $('#search-idle').hidden = true;
    status.textContent = 'Searching…';
    try {
      const data = await api('/api/search', {
        query: searchState.query, type: searchState.type, mode: searchState.mode,
        limit: SEARCH_LIMIT, offset: searchState.offset, variants: searchState.variants,
      });
      if (seq !== searchState.seq) return;  // a newer search superseded this one
      if (!appendMode) searchState.maxScore = data.hits.length ? data.hits[0].score : 0;
      data.hits.forEach((hit, i) => results.appendChild(resultItem(hit, data.offset + i + 1)));
      const m = data.meta;
      clear(status);
      append(status, [
        plural(data.total, 'result') + ' · ' + m.mode + (m.fusion ? ' (' + m.fusion + ')' : '') + ' · ' + ms(m.took_ms) +
        ' · keyword ' + m.fts_matches + ' / semantic ' + m.vector_matches,
        ...(m.warnings || []).map((w) => h('div', { class: 'warning', text: '⚠ ' + w })),
      ]);
      if (!data.total) status.appendChild(h('div', { text: 'Nothing matched. Try other words or another mode.' }));
      searchState.offset = data.offset + data.hits.length;
      more.hidden = searchState.offset >= data.total || !data.hits.length;
      results.setAttribute('data-state', 'done');
      results.setAttribute('data-total', String(data.total));
      refreshUsage();  // the search was logged: update latency and activity
    } catch (err) {
      if (seq !== searchState.seq) return;
      clear(status).appendChild(h('div', { class: 'error', text: err.message }));
      results.setAttribute('data-state', 'error');
    }
  }

  function runSearch(query) {
    $('#search-input').value = query;
    searchState.query = query;
    searchState.variants = phrasings();
    searchState.type = $('#search-type').value;
    searchState.mode = $('#search-mode').value;
    doSearch(false);
    $('#search').scrollIntoView({ behavior: 'smooth', block: 'start' });
  }

  const MAX_PHRASINGS = 4;  // SearchRequest.variants: at most 4, each at most 200 characters

  function phrasings() {
    return Array.from(document.querySelectorAll('#phrasings input')).map((i) => i.value.trim()).filter(Boolean);
  }

  function addPhrasing() {
    const box = $('#phrasings');
    const inputs = box.querySelectorAll('input');
    if (inputs.length >= MAX_PHRASINGS) return;
    const input = h('input', { type: 'search', class: 'phrasing', maxlength: 200,
      placeholder: 'the same need in other words (the notes\' words, another language)',
      'aria-label': 'Other phrasing ' + (inputs.length + 1) });
    box.insertBefore(input, $('#add-phrasing'));
    input.focus();
    $('#add-phrasing').hidden = inputs.length + 1 >= MAX_PHRASINGS;
  }

  function onSubmit(ev) {
    ev.preventDefault();
    searchState.variants = phrasings();
    const query = $('#search-input').value;
    if (!query.trim()) {
      clear($('#search-status')).appendChild(h('div', { class: 'error', text: 'Type a few words to search for.' }));
      return;
    }
    searchState.query = query;
    searchState.type = $('#search-type').value;
    searchState.mode = $('#search-mode').value;
    doSearch(false);
  }

  // -- file viewer ----------------------------------------------------------------------------------
  let viewerSeq = 0;
  let lastFocus = null;

  async function openViewer(spec) {
    const viewer = $('#viewer');
    const body = clear($('#viewer-body'));
    const meta = clear($('#viewer-meta'));
    const seq = ++viewerSeq;
    if (viewer.hidden) lastFocus = document.activeElement;
    $('#viewer-title').textContent = spec.title || spec.path;
    if (spec.heading) $('#viewer-title').appendChild(h('span', { class: 'muted', text: ' › ' + spec.heading }));
    append(meta, [
      spec.type ? h('span', { class: 'badge ' + typeClass(spec.type), text: spec.type }) : null,
      h('code', { text: spec.path + (spec.start ? ':' + spec.start + '-' + spec.end : '') }),
      spec.id ? h('span', { text: 'id ' + spec.id }) : null,
      spec.hash ? h('span', { class: 'mono', title: 'sha256 of the cited lines', text: 'sha256 ' + spec.hash.slice(0, 12) + '…' }) : null,
    ]);
    viewer.setAttribute('data-path', spec.path);
    viewer.setAttribute('data-state', 'loading');
    viewer.hidden = false;
    $('#scrim').hidden = false;
    body.appendChild(h('div', { class: 'empty', text: 'Loading…' }));
    viewer.focus({ preventScroll: true });
    try {
      const file = await api('/api/file', { path: spec.path });
      if (seq !== viewerSeq) return;
      clear(body);
      const lines = file.text.split('\n');
      if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
      const frag = document.createDocumentFragment();
      let first = null;
      lines.forEach((line, i) => {
        const n = i + 1;
        const hl = spec.start && n >= spec.start && n <= spec.end;
        const row = h('div', { class: 'line' + (hl ? ' hl' : ''), 'data-line': n },
          h('span', { class: 'num', text: String(n) }), h('span', { class: 'txt', text: line || ' ' }));
        if (hl && !first) first = row;
        frag.appendChild(row);
      });
      body.appendChild(frag);
      meta.appendChild(h('span', { text: plural(lines.length, 'line') + ' · ' + file.size + ' bytes' }));
      viewer.setAttribute('data-state', 'done');
      if (first) first.scrollIntoView({ block: 'center' });
      else body.scrollTop = 0;
    } catch (err) {
      if (seq !== viewerSeq) return;
      clear(body).appendChild(h('div', { class: 'error', text: err.message }));
      viewer.setAttribute('data-state', 'error');
    }
  }

  function closeViewer() {
    $('#viewer').hidden = true;
    $('#scrim').hidden = true;
    viewerSeq++;
    if (lastFocus && typeof lastFocus.focus === 'function') lastFocus.focus({ preventScroll: true });
  }

  // -- concept graph --------------------------------------------------------------------------------
  let graphData = null;

  /** Fruchterman-Reingold with gravity; deterministic start (golden-angle spiral), fixed iterations. */
  function layout(nodes, edges, W, H, radius) {
    const n = nodes.length;
    const idx = new Map(nodes.map((nd, i) => [nd.id, i]));
    const X = new Float64Array(n), Y = new Float64Array(n), DX = new Float64Array(n), DY = new Float64Array(n);
    const golden = Math.PI * (3 - Math.sqrt(5));
    for (let i = 0; i < n; i++) {
      const r = 12 * Math.sqrt(i + 0.5);
      X[i] = W / 2 + r * Math.cos(i * golden);
      Y[i] = H / 2 + r * Math.sin(i * golden);
    }
    const links = [];
    const maxW = Math.max(1, ...edges.map((e) => e.weight));
    for (const e of edges) {
      const a = idx.get(e.source), b = idx.get(e.target);
      if (a === undefined || b === undefined) continue;
      links.push([a, b, e.kind === 'tagged' ? 0.35 : 0.1 + 0.5 * e.weight / maxW]);
    }
    const k = Math.sqrt((W * H) / Math.max(1, n)) * 0.75;
    const iterations = n > 200 ? 140 : 320;
    let temp = Math.min(W, H) / 8;
    const cool = temp / iterations;
    for (let it = 0; it < iterations; it++) {
      DX.fill(0); DY.fill(0);
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          let dx = X[i] - X[j], dy = Y[i] - Y[j];
          let d2 = dx * dx + dy * dy;
          if (d2 < 0.01) { dx = 0.1 * ((i % 3) - 1) + 0.05; dy = 0.1; d2 = dx * dx + dy * dy; }
          const f = (k * k) / d2;
          DX[i] += dx * f; DY[i] += dy * f; DX[j] -= dx * f; DY[j] -= dy * f;
        }
      }
      for (const [a, b, w] of links) {
        const dx = X[a] - X[b], dy = Y[a] - Y[b];
        const d = Math.sqrt(dx * dx + dy * dy) || 0.01;
        const f = (d / k) * w;
        DX[a] -= dx * f; DY[a] -= dy * f; DX[b] += dx * f; DY[b] += dy * f;
      }
      for (let i = 0; i < n; i++) {
        DX[i] -= (X[i] - W / 2) * 0.02 * k / 10;
        DY[i] -= (Y[i] - H / 2) * 0.04 * k / 10;
        const d = Math.sqrt(DX[i] * DX[i] + DY[i] * DY[i]) || 1;
        const step = Math.min(d, temp);
        X[i] += (DX[i] / d) * step;
        Y[i] += (DY[i] / d) * step;
      }
      temp = Math.max(0.5, temp - cool);
    }
    // Fit into the box with a margin for labels.
    const padX = 70, padR = 70, padY = 30;
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (let i = 0; i < n; i++) {
      x0 = Math.min(x0, X[i]); x1 = Math.max(x1, X[i]); y0 = Math.min(y0, Y[i]); y1 = Math.max(y1, Y[i]);
    }
    const sx = (W - padX - padR) / Math.max(1, x1 - x0), sy = (H - 2 * padY - 14) / Math.max(1, y1 - y0);
    for (let i = 0; i < n; i++) {
      X[i] = padX + (X[i] - x0) * sx;
      Y[i] = padY + (Y[i] - y0) * sy;
    }
    // Collisions: push overlapping circles apart (radius plus a gap), a few relaxation rounds.
    const R = nodes.map((nd) => radius(nd));
    for (let round = 0; round < 40; round++) {
      let moved = false;
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const dx = X[j] - X[i], dy = Y[j] - Y[i];
          const d = Math.sqrt(dx * dx + dy * dy) || 0.01;
          const overlap = R[i] + R[j] - d;
          if (overlap <= 0) continue;
          const ux = dx / d, uy = dy / d, half = overlap / 2;
          X[i] -= ux * half; Y[i] -= uy * half; X[j] += ux * half; Y[j] += uy * half;
          moved = true;
        }
      }
      for (let i = 0; i < n; i++) {
        X[i] = Math.min(W - R[i], Math.max(R[i], X[i]));
        Y[i] = Math.min(H - R[i] - 12, Math.max(R[i], Y[i]));
      }
      if (!moved) break;
    }
    const out = new Map();
    for (let i = 0; i < n; i++) out.set(nodes[i].id, [X[i], Y[i]]);
    return out;
  }

  function renderGraph() {
    const svg = $('#graph-svg');
    clear(svg);
    if (!graphData) return;
    const W = 1200, H = 540;
    const withDocs = $('#graph-documents').checked;
    const withRelations = $('#graph-relations').checked;
    const concepts = graphData.nodes.filter((nd) => nd.kind === 'concept');
    const entities = withRelations ? graphData.nodes.filter((nd) => nd.kind === 'entity') : [];
    let documents = withDocs ? graphData.nodes.filter((nd) => nd.kind === 'document') : [];
    const allDocuments = documents.length;
    if (documents.length > MAX_GRAPH_DOCUMENTS) {
      documents = documents.slice().sort((a, b) => b.count - a.count || (a.id < b.id ? -1 : 1)).slice(0, MAX_GRAPH_DOCUMENTS);
    }
    if (withRelations) {
      // A note a relation names is one node, its document's (`file:PATH`, server/services/browse.py); where that
      // document is not drawn (notes off, or past the cap), the relation draws it as a labelled entity.
      const shown = new Set(documents.map((nd) => nd.id));
      const named = new Set(graphData.edges.filter((e) => e.kind === 'relation').flatMap((e) => [e.source, e.target]));
      for (const nd of graphData.nodes) {
        if (nd.kind === 'document' && named.has(nd.id) && !shown.has(nd.id)) entities.push(Object.assign({}, nd, { kind: 'entity' }));
      }
    }
    const nodes = [...concepts, ...documents, ...entities];
    const keep = new Set(nodes.map((nd) => nd.id));
    const coEdges = graphData.edges.filter((e) => e.kind === 'co-occurs' && keep.has(e.source) && keep.has(e.target))
      .slice(0, MAX_CONCEPT_EDGES);  // the API lists them heaviest first
    const tagEdges = graphData.edges.filter((e) => e.kind === 'tagged' && keep.has(e.source) && keep.has(e.target));
    const relEdges = graphData.edges.filter((e) => e.kind === 'relation' && keep.has(e.source) && keep.has(e.target));
    const edges = [...coEdges, ...tagEdges, ...relEdges];
    const carrying = Math.max(allDocuments, graphData.documents_total || 0);
    const from = graphData.concepts_from ? ' (' + graphData.concepts_from + ')' : '';
    $('#graph-summary').textContent = plural(concepts.length, 'concept') + from +
      (withDocs ? ' · ' + plural(documents.length, 'note') + (carrying > documents.length ? ' (of ' + carrying + ' carrying them)' : '') : '') +
      ' · ' + plural(coEdges.length, 'co-occurrence link') +
      (withRelations ? ' · ' + plural(relEdges.length, 'relation') : '');
    if (!concepts.length && !entities.length) {
      svg.appendChild(s('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'faint' }, 'No concepts yet.'));
      svg.setAttribute('data-state', 'done');
      return;
    }
    const maxCount = Math.max(1, ...concepts.map((c) => c.count));
    const radius = (nd) => (nd.kind === 'concept' ? 5 + 13 * Math.sqrt(nd.count / maxCount) : nd.kind === 'entity' ? 6 : 4);
    const labelled = (nd) => nd.kind === 'concept' || nd.kind === 'entity';
    const shortLabel = (nd) => (nd.label.length > 24 ? nd.label.slice(0, 23) + '…' : nd.label);
    // Room for a node and (concepts) its label centred below it.
    const room = (nd) => (labelled(nd) ? Math.max(radius(nd) + 4, shortLabel(nd).length * 3.3 + 2) : radius(nd) + 3);
    const pos = layout(nodes, edges, W, H, room);
    const maxW = Math.max(1, ...coEdges.map((e) => e.weight));
    const neighbours = new Map(nodes.map((nd) => [nd.id, new Set([nd.id])]));
    const edgeLayer = s('g', { class: 'edges' });
    const edgeEls = [];
    for (const e of edges) {
      const [xa, ya] = pos.get(e.source), [xb, yb] = pos.get(e.target);
      const tagged = e.kind === 'tagged';
      const relation = e.kind === 'relation';
      const el = s('line', {
        class: 'edge' + (tagged ? ' tagged' : '') + (relation ? ' relation' : ''),
        x1: xa.toFixed(1), y1: ya.toFixed(1), x2: xb.toFixed(1), y2: yb.toFixed(1),
        'stroke-width': tagged ? 0.6 : relation ? 1.4 : (0.6 + 3.4 * e.weight / maxW).toFixed(2),
        'stroke-opacity': tagged ? 0.35 : relation ? 0.8 : (0.15 + 0.55 * e.weight / maxW).toFixed(2),
        'data-source': e.source, 'data-target': e.target, 'data-weight': e.weight, 'data-label': e.label || '',
      }, s('title', null, tagged ? 'tagged' : relation ? e.label + ' (stated in ' + plural(e.weight, 'note') + ')'
        : 'in ' + plural(e.weight, 'note') + ' together'));
      neighbours.get(e.source).add(e.target);
      neighbours.get(e.target).add(e.source);
      edgeEls.push([el, e.source, e.target]);
      edgeLayer.appendChild(el);
    }
    svg.appendChild(edgeLayer);
    const labelLayer = s('g', { class: 'edge-labels' });
    const edgeLabels = relEdges.map((e) => {
      const [xa, ya] = pos.get(e.source), [xb, yb] = pos.get(e.target);
      const x = (xa + xb) / 2, y = (ya + yb) / 2 - 3;
      const text = s('text', { x: x.toFixed(1), y: y.toFixed(1), 'text-anchor': 'middle', class: 'edge-label' },
        e.label.length > 28 ? e.label.slice(0, 27) + '…' : e.label);
      labelLayer.appendChild(text);
      return { text, x, y };
    });
    svg.appendChild(labelLayer);
    const nodeLayer = s('g', { class: 'nodes' });
    const nodeEls = new Map();
    // Documents first so that concept labels are drawn on top.
    for (const nd of [...documents, ...entities, ...concepts]) {
      const [x, y] = pos.get(nd.id);
      const concept = nd.kind === 'concept';
      const entity = nd.kind === 'entity';
      const r = radius(nd);
      const label = shortLabel(nd);
      const g = s('g', {
        class: 'node ' + (concept ? 'concept' : entity ? 'entity' : 'document ' + typeClass(nd.type)), 'data-node': nd.id,
        'data-count': nd.count, transform: 'translate(' + x.toFixed(1) + ',' + y.toFixed(1) + ')',
        tabindex: 0,
      },
        entity ? s('rect', { x: -r, y: -r, width: 2 * r, height: 2 * r, rx: 2 }) : s('circle', { r: r.toFixed(1) }),
        concept || entity ? s('text', { x: 0, y: (r + 11).toFixed(1), 'text-anchor': 'middle' }, label) : null,
        s('title', null, concept ? nd.label + ' — in ' + plural(nd.count, 'note') + ' (click to search)'
          : entity ? nd.label + ' — in ' + plural(nd.count, 'relation') + (nd.id.startsWith('file:') ? ' (a note: click to open)' : ' (click to search)')
          : nd.label + ' (' + (nd.type || 'note') + ', ' + plural(nd.count, 'concept') + ') — click to open'));
      const focus = () => {
        svg.classList.add('focus');
        const near = neighbours.get(nd.id);
        for (const [id, el] of nodeEls) el.classList.toggle('near', near.has(id));
        for (const [el, a, b] of edgeEls) el.classList.toggle('near', a === nd.id || b === nd.id);
      };
      const blur = () => svg.classList.remove('focus');
      g.addEventListener('mouseenter', focus);
      g.addEventListener('mouseleave', blur);
      g.addEventListener('focus', focus);
      g.addEventListener('blur', blur);
      g.addEventListener('click', () => {
        if (concept || (entity && !nd.id.startsWith('file:'))) focusGraph(nd, neighbours.get(nd.id), nodeEls, edgeEls);
        else openViewer({ path: nd.id.replace(/^file:/, ''), title: nd.label, type: nd.type });  // a note
      });
      nodeEls.set(nd.id, g);
      nodeLayer.appendChild(g);
    }
    svg.appendChild(nodeLayer);
    // Every drawn node is an obstacle, so no label covers a node; node labels first (in the API's order), then
    // the relations' labels, each hidden where it would overlap anything placed (its tooltip keeps it).
    const obstacles = nodes.map((nd) => {
      const [x, y] = pos.get(nd.id), r = radius(nd);
      return { x: x - r, y: y - r, w: 2 * r, h: 2 * r, id: nd.id };
    });
    const placed = placeLabels([...concepts, ...entities].map((nd) => {
      const [x, y] = pos.get(nd.id);
      return { text: nodeEls.get(nd.id).querySelector('text'), x, y, r: radius(nd), own: nd.id };
    }), obstacles);
    placeEdgeLabels(edgeLabels, placed);
    const kept = focused && nodeEls.has(focused.id) ? focused : null;
    if (kept) focusGraph(kept, neighbours.get(kept.id), nodeEls, edgeEls);
    else unfocusGraph();
    svg.setAttribute('data-state', 'done');
  }

  /** Labels in the API's order (most telling concept first): below the node, else above, right or left of
   * it; a label that fits nowhere without overlapping a placed label or another node is hidden (the tooltip
   * keeps the name). Returns every placed box, the obstacles included, for the edge labels. */
  function placeLabels(items, obstacles) {
    const placed = obstacles.slice();
    const hit = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
    for (const { text, x, y, r, own } of items) {
      const spots = [[0, r + 11, 'middle'], [0, -r - 4, 'middle'], [r + 3, 4, 'start'], [-r - 3, 4, 'end'],
        [r + 2, r + 9, 'start'], [-r - 2, r + 9, 'end'], [r + 2, -r - 2, 'start'], [-r - 2, -r - 2, 'end'],
        [0, r + 23, 'middle'], [0, -r - 16, 'middle']];
      let box = null;
      for (const [dx, dy, anchor] of spots) {
        setAttrs(text, { x: dx, y: dy.toFixed(1), 'text-anchor': anchor });
        const candidate = textBox(text, x, y);
        if (!placed.some((b) => b.id !== own && hit(candidate, b))) { box = candidate; break; }
      }
      if (!box) { text.setAttribute('visibility', 'hidden'); continue; }
      placed.push(box);
    }
    return placed;
  }

  /** The box the text's glyphs take, as drawn (`x`, `y`: its node's position; 0 for a text outside a node), one
   * unit wider each way: a box guessed from the font size missed the ascent and descent of some fonts, and a
   * label then touched a node. */
  function textBox(text, x, y) {
    const b = text.getBBox();
    return { x: x + b.x - 1, y: y + b.y - 1, w: b.width + 2, h: b.height + 2 };
  }

  /** A relation's label at the middle of its line, hidden where it would overlap a label or a node. */
  function placeEdgeLabels(items, placed) {
    const hit = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
    for (const { text } of items) {
      const box = textBox(text, 0, 0);
      if (placed.some((b) => hit(box, b))) { text.setAttribute('visibility', 'hidden'); continue; }
      placed.push(box);
    }
  }

  /** Click on a concept: only it and its neighbours stay, with buttons to search it or show all again. */
  function focusGraph(nd, near, nodeEls, edgeEls) {
    focused = nd;
    $('#graph-svg').classList.add('focused');
    for (const [id, el] of nodeEls) el.classList.toggle('out', !near.has(id));
    for (const [el, a, b] of edgeEls) el.classList.toggle('out', a !== nd.id && b !== nd.id);
    for (const el of document.querySelectorAll('#graph-svg .edge-label')) el.classList.add('out');
    $('#graph-search').textContent = 'Search “' + nd.label + '”';
    $('#graph-search').hidden = false;
    $('#graph-all').hidden = false;
    $('#graph-focus').textContent = nd.label + ' and ' + plural(near.size - 1, 'neighbour');
  }

  function unfocusGraph() {
    focused = null;
    $('#graph-svg').classList.remove('focused');
    for (const el of document.querySelectorAll('#graph-svg .out')) el.classList.remove('out');
    $('#graph-search').hidden = true;
    $('#graph-all').hidden = true;
    $('#graph-focus').textContent = '';
  }

  let focused = null;  // the concept the graph is focused on, kept across redraws

  async function loadGraph() {
    try {
      graphData = await api('/api/graph', { limit: 40, documents: true });
      renderGraph();
    } catch (err) {
      const svg = clear($('#graph-svg'));
      svg.appendChild(s('text', { x: 600, y: 270, 'text-anchor': 'middle', class: 'faint' }, 'Graph unavailable: ' + err.message));
      svg.setAttribute('data-state', 'error');
    }
  }

  // -- feedback and supersessions -------------------------------------------------------------------
  function noteItem(path, title, detail, attrs) {
    const li = h('li', Object.assign({ class: 'note', tabindex: 0, role: 'button' }, attrs || {}),
      h('span', { class: 'title', text: title || path || '(gone)' }),
      h('span', { class: 'meta', text: detail }));
    if (path) {
      const open = () => openViewer({ path: path, title: title });
      li.addEventListener('click', open);
      li.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); open(); } });
    }
    return li;
  }

  function renderFeedback(top) {
    for (const [key, id, empty] of [['helpful', '#most-helpful', 'No note marked helpful yet (oracle_feedback).'],
      ['misleading', '#most-misleading', 'No note marked misleading yet.']]) {
      const target = clear($(id));
      const rows = top[key] || [];
      $('#' + key + '-total').textContent = rows.length ? String(rows.length) : '';
      if (!rows.length) target.appendChild(h('li', { class: 'empty', text: empty }));
      for (const r of rows) {
        target.appendChild(noteItem(r.source_file, (r.title || '') + (r.heading ? ' › ' + r.heading : ''),
          '+' + r.helpful + ' / −' + r.misleading + ' · ×' + num(r.feedback_factor).toFixed(3) +
          (r.authors && r.authors.length ? ' · by ' + r.authors.join(', ') : ''), { 'data-id': r.id }));
      }
    }
  }

  function renderSupersessions(result) {
    const target = clear($('#superseded'));
    const rows = result.supersessions || [];
    $('#superseded-total').textContent = rows.length ? String(rows.length) : '';
    if (!rows.length) target.appendChild(h('li', { class: 'empty', text: 'Nothing superseded (oracle_supersede or superseded_by: in frontmatter).' }));
    for (const r of rows) {
      target.appendChild(noteItem(r.old_file, r.old_title || r.old,
        '→ ' + (r.new_title || r.new) + ' · ' + r.via + (r.author ? ' · by ' + r.author : '') +
        (r.reason ? ' · ' + r.reason : ''), { 'data-old': r.old }));
    }
  }

  async function loadImprovements() {
    try {
      const [top, sup] = await Promise.all([api('/api/feedback', { limit: 8 }), api('/api/supersessions')]);
      renderFeedback(top);
      renderSupersessions(sup);
    } catch (err) {
      for (const id of ['#most-helpful', '#most-misleading', '#superseded']) sectionError($(id), err);
    }
  }

  // -- loading --------------------------------------------------------------------------------------
  let lastStats = null;

  function sectionError(target, err) {
    clear(target).appendChild(h('div', { class: 'error', text: err.message }));
  }

  async function loadStats() {
    const box = $('#overview-error');
    try {
      lastStats = await api('/api/stats');
      renderStats(lastStats);
      box.hidden = true;
    } catch (err) {
      box.textContent = 'Could not read /api/stats: ' + err.message;
      box.hidden = false;
    }
  }

  async function loadLogs() {
    try {
      const logs = await api('/api/logs', { limit: 60, days: DAYS });
      renderActivity(logs);
      renderLatency(logs, lastStats ? lastStats.usage : {});
      renderConsultations(logs);
      renderWrites(logs);
      renderRecentQueries(logs);
    } catch (err) {
      for (const id of ['#chart-activity', '#chart-latency', '#consultations', '#writes']) sectionError($(id), err);
    }
  }

  async function loadConcepts() {
    try {
      renderConcepts(await api('/api/concepts', { limit: 12 }));
    } catch (err) {
      sectionError($('#chart-concepts'), err);
    }
  }

  let usageTimer = null;
  function refreshUsage() {
    // Debounced: several quick searches cause one refresh.
    clearTimeout(usageTimer);
    usageTimer = setTimeout(async () => {
      await loadStats();
      await loadLogs();
    }, 400);
  }

  async function refreshAll() {
    const button = $('#refresh');
    button.disabled = true;
    await loadStats();  // first: the latency chart uses its p50/p95
    await Promise.all([loadLogs(), loadConcepts(), loadImprovements()]);
    $('#updated').textContent = 'updated ' + localTime(new Date());
    button.disabled = false;
  }

  async function start() {
    $('#search-form').addEventListener('submit', onSubmit);
    $('#add-phrasing').addEventListener('click', addPhrasing);
    $('#phrasings').addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && ev.target.matches('input')) onSubmit(ev);
    });
    $('#more').addEventListener('click', () => doSearch(true));
    $('#viewer-close').addEventListener('click', closeViewer);
    $('#scrim').addEventListener('click', closeViewer);
    document.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && !$('#viewer').hidden) closeViewer();
      else if (ev.key === '/' && document.activeElement === document.body) { ev.preventDefault(); $('#search-input').focus(); }
    });
    $('#graph-documents').addEventListener('change', renderGraph);
    $('#graph-relations').addEventListener('change', renderGraph);
    $('#graph-all').addEventListener('click', unfocusGraph);
    $('#graph-search').addEventListener('click', () => { if (focused) runSearch(focused.label); });
    $('#refresh').addEventListener('click', () => { refreshAll(); loadGraph(); });
    await Promise.all([refreshAll(), loadGraph()]);
    document.body.setAttribute('data-ready', '1');
    setInterval(() => { if (!document.hidden) refreshAll(); }, REFRESH_MS);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
