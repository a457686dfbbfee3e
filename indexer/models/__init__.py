"""The models the index runs: the MiniLM embedder (embed, model_graph), the multilingual encoder, the
reranker. Each loads from an installed package; nothing is downloaded. No model reads the store: the
multilingual vectors' table is the store's (store/sqlite/multilingual.py)."""
