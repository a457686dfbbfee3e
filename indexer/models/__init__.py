"""The models the index runs: the MiniLM embedder (embed, model_graph), the multilingual encoder, the
reranker. Each loads from an installed package; nothing is downloaded."""
