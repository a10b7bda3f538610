/* Stands in for the opencl backend when this binary was built without
 * OpenCL: kv_backend_new then reports "not built". */
#include "kernel/backend.h"

#ifndef KV_HAVE_OPENCL
kv_backend *kv_backend_opencl_new(void)
{
    return NULL;
}
#endif
