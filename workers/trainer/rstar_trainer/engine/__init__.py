"""The reference engine: a transformers model served over SGLang's and vLLM's HTTP routes, with a
KV-token capacity enforced the way SGLang does (waiting, retraction and recompute)."""
