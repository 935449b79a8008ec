/*
 * nm_bcast.h - the node's own copy of a broadcast file, for the relay
 * (nm_relay.c): the same checks, temporary file and commit as a copy that
 * arrives over the fabric (nm_bcast.c).
 */
#ifndef STORM_NM_BCAST_H
#define STORM_NM_BCAST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct xfer nm_bcast_file_t;

/*
 * Check srun's manifest credential (munge: uid, job owner, this node in
 * the job, sizes) and prepare the hidden temporary file.  Returns
 * STORM_BCAST_READY with *out set, or the refusal state
 * (storm_bcast.h) with *out NULL.
 */
extern int nm_bcast_accept(const char *cred, uint64_t key,
			   nm_bcast_file_t **out);
/* Where the data goes: the mapping of the temporary file. */
extern void *nm_bcast_file_map(nm_bcast_file_t *f, uint64_t *size);
/* The relay's job attestation to send after srun's credential (see
 * nm_bcast.c), or NULL: the other nodes then ask slurmctld. */
extern const char *nm_bcast_file_attest(nm_bcast_file_t *f);
/* The uid the credential vouches for (the broadcast's user). */
extern uid_t nm_bcast_file_uid(nm_bcast_file_t *f);
/* Does the data match the credential's checksum (computed once)? */
extern bool nm_bcast_file_verify(nm_bcast_file_t *f);
/* Rename into place (commit) or unlink; frees f.  Returns
 * STORM_BCAST_DONE or why not. */
extern int nm_bcast_finish(nm_bcast_file_t *f, bool commit);

/*
 * Tasks that wait for their node's copy before exec (BcastOverlap,
 * nm_bcast_wait.c): the "bcast_wait" control command; nm_bcast_wake()
 * records a transfer's final state on this node (DONE or why not; root:
 * its relay's rank) and answers its waiters when that is a refusal;
 * nm_bcast_go() records the relay's go-ahead (every node holds the file)
 * and lets the waiters of a complete copy go; nm_bcast_wait_expire()
 * answers those whose wait ran out; nm_bcast_wait_fini() answers everyone
 * (the NM stops).
 */
extern void nm_bcast_wait_init(void);
extern void nm_bcast_wake(int root, uint64_t key, int st);
extern void nm_bcast_go(int root, uint64_t key);
extern void nm_bcast_wait_expire(void);
extern void nm_bcast_wait_fini(void);

/*
 * What backs BcastDir (nm_bcast_dir.c): nm_bcast_dir_report() logs it once.
 * nm_mount_of() finds the mount holding an absolute, resolved path in a
 * mountinfo table (fstype and super-options; -ENOENT if none);
 * nm_tmpfs_huge() says whether a tmpfs with those options gets huge pages
 * for its files, given the sysfs shmem_enabled line (or NULL).
 */
extern void nm_bcast_dir_report(const char *dir);
extern int nm_mount_of(FILE *mountinfo, const char *path, char *fstype,
		       size_t fslen, char *opts, size_t optlen);
extern bool nm_tmpfs_huge(const char *opts, const char *shmem_enabled);

#endif /* STORM_NM_BCAST_H */
