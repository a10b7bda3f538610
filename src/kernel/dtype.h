/* Where bench/ still includes the element types: they are backend/dtype.h
 * (src/backend). To go once it includes that. */
#include "backend/dtype.h"
