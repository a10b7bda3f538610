/* Red team (cpu): does not compile. */
#include <kevolve/task.h>
int kv_launch(const kv_launch_args *a)
{
    return a->missing_field;
}
