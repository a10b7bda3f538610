/* kevolve-supervisor: the small program that watches one program kevolve
 * runs and kills everything it started when it ends (see util/supervise.h).
 * It is embedded into the library and executed from memory by kv_proc, so
 * it is never installed nor started by hand. */
#include "util/supervise.h"

int main(int argc, char **argv, char **envp)
{
    return kv_sup_main(argc, argv, envp);
}
