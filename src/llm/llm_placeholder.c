/* Placeholder translation unit: the LLM client is being written. */
typedef int kv_llm_placeholder;
