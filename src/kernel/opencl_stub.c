/* Stands in for the opencl backend when this binary was built without
 * OpenCL: kv_jdev_new and kv_rdev_new then report "not built". */
#include "kernel/backend.h"

#ifndef KV_HAVE_OPENCL
kv_jdev *kv_jdev_opencl_new(void)
{
    return NULL;
}

kv_rdev *kv_rdev_opencl_new(void)
{
    return NULL;
}
#endif
