/* Where src/export and bench/ still include the backends' table: it is
 * backend/backend.h (src/backend). To go once they include that. */
#include "backend/backend.h"
