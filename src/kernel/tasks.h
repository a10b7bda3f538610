/* Where src/export and bench/ still include the task registry: it is
 * judge/tasks.h (src/judge). To go once they include that. */
#include "judge/tasks.h"
