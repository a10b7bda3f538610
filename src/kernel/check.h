/* Where bench/ still includes the numeric checks: they are backend/check.h
 * (src/backend). To go once it includes that. */
#include "backend/check.h"
