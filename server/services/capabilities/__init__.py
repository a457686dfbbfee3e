"""What Oracle can do, one module per tool family: search/ (the one search), consult, browse (reflect, list,
concepts), read, files, learn, edit (and archive), supersede, relations, feedback, verify, working_set, freshness,
stats, history (revisions and restore in the team store), team (named tokens), indexing (`oracle index`). Each is
plain functions over an `Oracle` (runtime/app.py) taking and returning the models of vocabulary/."""
