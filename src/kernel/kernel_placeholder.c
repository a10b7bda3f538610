/* Placeholder translation unit: the kernel harness is being written. */
typedef int kv_kernel_placeholder;
