"""The one search (pipeline.py) and its pure parts, each testable without a database:

- query.py: user text into keyword expressions that can never be a syntax error.
- scoring.py: fusion of the keyword and vector legs, weak-match bars, adjustments.
- expansion.py: query expansion from the first ranking's best sections.
- notes.py: sections grouped into notes, the unit of a result page.
- where.py: frontmatter-field filters resolved to the notes they let through.
- vocabulary.py: the notes' own words a weak page offers to ask with next (`try`).

May import `indexer` and `oracle_server.services`; nothing above.
"""
