/* One writer per run: the lock on a run's output folder.
 *
 * `kevolve run` and `kevolve resume` hold OUTPUT_DIR/run.lock for the whole
 * life of the run, so a second run, resume or run --force on the same folder
 * is refused while the first writes (it would interleave iterations, or
 * unlink the store under the first). Readers (status, best, serve, report)
 * never take it: SQLite's WAL lets them read while the run writes.
 *
 * The lock is an open-file-description lock (fcntl F_OFD_SETLK, Linux >=
 * 3.15), flock where the kernel has none: the kernel drops it when the
 * process ends however it ends, kill -9 included, so a stale run.lock file
 * never blocks anything. Linux forwards such locks to the server on NFSv4
 * and on NFSv3 with lockd, so two machines sharing the folder see each
 * other's lock; it does not on NFS mounted with `nolock` (locks stay local
 * to each machine). Where the file system refuses locks altogether, the run
 * goes on with a warning that it is unprotected. */
#ifndef KV_ENGINE_RUN_LOCK_H
#define KV_ENGINE_RUN_LOCK_H

typedef struct kv_run_lock kv_run_lock;

/* Takes the lock of the run in OUTPUT_DIR (which must exist) for COMMAND
 * ("run", "resume"), and writes who holds it into the file. Returns
 * KV_EXIT_OK with *LOCK, KV_EXIT_BUSY with a malloc'd message naming the
 * holder in *ERR when another process holds it, or KV_EXIT_IO when the lock
 * file cannot be made. */
int kv_run_lock_take(const char *output_dir, const char *command, kv_run_lock **lock, char **err);
/* Releases the lock (NULL is fine). The file stays: removing it would let a
 * third process lock a new file while a second still holds the old one. */
void kv_run_lock_release(kv_run_lock *lock);

#endif
