/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_bcast.h - the file broadcast protocol between srun (the STORM
 * launch plugin) and the node managers.  Header only: srun and storm-nm
 * include it, nothing else.
 *
 * srun does not join the fabric (that costs an srun hundreds of
 * milliseconds: loading libfabric and probing providers).  It hands the
 * file over one TCP connection to the node manager of the step's first
 * node, the relay, which is on the fabric already, and the relay is the
 * root of the multicast:
 *   0. srun -> relay (TCP, BcastPort): a storm_relay_req_t, srun's munge
 *      credential (its payload names job, step, uid, file, size, mode and
 *      checksum), the step's node list, then the file.  The relay checks the
 *      credential as every node does (asking slurmctld about the job).
 *   1. Before it reads the file: XFER-AND-SIGNAL of the manifest (the
 *      credential, a newline and the relay's job attestation, a munge
 *      credential of root naming key, job, owner and nodes) from the relay
 *      to the step's other nodes, at offset STORM_BCAST_MANIFEST | key.
 *      Each NM verifies it on commit, prepares a hidden temporary file of
 *      the right size and sets its variable storm_bcast_var(key) to
 *      STORM_BCAST_VAL(key, READY) or to a refusal code.  Meanwhile the
 *      relay receives the file straight into the mapping of its own
 *      temporary file and verifies the checksum.
 *   2. COMPARE-AND-WRITE(var == READY) over those nodes.
 *   3. XFER-AND-SIGNAL of the file itself to offset STORM_BCAST_DATA | key:
 *      each NM's destination callback returns the mapping of the temporary
 *      file, so the chunks land in place (one copy per byte per node).  On
 *      commit the NM checks the checksum and renames the file into place
 *      (var = DONE); on abort it unlinks it.
 *   4. COMPARE-AND-WRITE(var == DONE): every node holds the file.  The
 *      relay renames its own copy into place.
 *   5. XFER-AND-SIGNAL of an empty block to offset STORM_BCAST_GO | key:
 *      the go-ahead.  Tasks of an overlapped launch (BcastOverlap) that
 *      wait on a node for this transfer are let go only now, when every
 *      node is known to hold the file, so that no task starts anywhere if
 *      any node fails.  The relay then answers srun with a
 *      storm_relay_rep_t (and the error text, naming nodes, on failure).
 * The credential is srun's, so every node, the relay included, checks the
 * same uid and job; the relay is trusted with the bytes only as far as the
 * checksum in that credential goes.
 *
 * A bundle (kind=tree) may carry references instead of files (storm.conf
 * BcastCacheSize): srun first sends the bundle with every file as its
 * SHA-256, each node places what its cache holds, and a node lacking any
 * reports ABSENT at step 4 (keeping nothing of it), after it sent the
 * relay the bitmap of the references it lacks (offset
 * STORM_BCAST_ABSENT_REPORT | key).  The relay then answers
 * STORM_RELAY_REP_ABSENT with the union of the bitmaps, and srun sends the
 * bundle again under a new key, the files some node lacked as data and
 * the others as references, which each node extracts, keeping what it
 * received in its cache.
 */
#ifndef STORM_BCAST_H
#define STORM_BCAST_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Offsets of broadcast transfers: never region offsets (the NM's
 * destination callback maps them), so they cannot collide with the Machine
 * Manager's use of the global region. */
#define STORM_BCAST_MANIFEST	((uint64_t) 1 << 63)
#define STORM_BCAST_DATA	((uint64_t) 1 << 62)
#define STORM_BCAST_GO		((uint64_t) 1 << 61)
/* a node -> the relay: what it lacks of a bundle of references */
#define STORM_BCAST_ABSENT_REPORT ((uint64_t) 1 << 60)
#define STORM_BCAST_KEY_MASK	((uint64_t) 0xffffffffffff)
#define STORM_BCAST_MAX_CRED	4096	/* srun's credential */
/* on the fabric: srun's credential, a newline, the relay's attestation */
#define STORM_BCAST_MAX_MANIFEST 16384

/* srun -> the step's tasks (BcastOverlap): "<key hex>:<wait ms>", the
 * transfer whose file a task waits for on its node before exec. */
#define STORM_BCAST_WAIT_ENV	"SLURM_STORM_BCAST_WAIT"

/* srun -> the step's tasks: the node-local copy of the executable.  With
 * STORM_BCAST_ORIG_ENV beside it, the copy is presented at the original
 * path in the task's own mount namespace (storm_present.c); alone (--bcast,
 * Slurm 23.02 on, where srun cannot rewrite argv[0]) each task executes the
 * copy in place of the user's command, its arguments unchanged. */
#define STORM_BCAST_EXEC_ENV	"SLURM_STORM_BCAST_EXEC"

/* srun -> the step's tasks: the executable's absolute path as srun
 * resolved it, over which each node lays its copy. */
#define STORM_BCAST_ORIG_ENV	"SLURM_STORM_BCAST_ORIG"

/* A transfer whose credential ends in this word carries a bundle
 * (storm_bundle.h): each node extracts it into a new directory of the
 * transfer's name, all or nothing, instead of keeping the file. */
#define STORM_BCAST_KIND_TREE	"kind=tree"

/* srun -> the step's tasks: the node-local directory of a bundle whose
 * entries mirror absolute paths ("opt/lib/libx.so" for /opt/lib/libx.so),
 * and the original paths, ':'-separated, over which each node lays that
 * directory's copies in the task's mount namespace. */
#define STORM_BCAST_TREE_ENV	"SLURM_STORM_BCAST_TREE"
#define STORM_BCAST_BINDS_ENV	"SLURM_STORM_BCAST_BINDS"

/* srun -> the step's tasks, kept for the user: where the named files
 * (SLURM_STORM_FILES) are on the node, under their absolute paths. */
#define STORM_FILES_DIR_ENV	"SLURM_STORM_FILES_DIR"

/* Variables: one per transfer, chosen by its key, above the NM's own
 * variables.  Two transfers whose keys share a slot on a common node at the
 * same time disturb each other (the later one's states replace the
 * earlier's: that one times out, nothing is corrupted); with random 48-bit
 * keys that takes two broadcasts at once and a 1 in 256 draw. */
#define STORM_BCAST_VAR_BASE	16
#define STORM_BCAST_VAR_SLOTS	256
#define STORM_BCAST_NVARS	(STORM_BCAST_VAR_BASE + STORM_BCAST_VAR_SLOTS)

static inline int storm_bcast_var(uint64_t key)
{
	return STORM_BCAST_VAR_BASE + (int) (key % STORM_BCAST_VAR_SLOTS);
}

/* srun -> relay: this header (integers in network byte order), then
 * cred_len bytes of credential, nodes_len bytes of node list (no NUL),
 * then size bytes of file. */
#define STORM_RELAY_MAGIC	0x53524c32u	/* "SRL2": XXH3 checksums */
#define STORM_RELAY_MAX_NODELIST 65536
typedef struct storm_relay_req {
	uint32_t magic;
	uint32_t cred_len;
	uint32_t nodes_len;
	uint32_t pad;
	uint64_t key;
	uint64_t size;
} storm_relay_req_t;

/* All of len bytes to (wr) or from the relay connection: 0, -errno, or
 * -ECONNRESET when the peer closed it. */
static inline int storm_bcast_io(int fd, void *buf, size_t len, bool wr)
{
	char *p = buf;

	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t) n;
	}
	return 0;
}

/* relay -> srun: this header, then msg_len bytes of text: the phases'
 * times on success, what failed (naming nodes) otherwise. */
#define STORM_RELAY_REP_MAGIC	0x53524c52u	/* "SRLR" */
#define STORM_RELAY_MAX_MSG	4096
#define STORM_RELAY_REP_OK	0	/* every node holds the file */
#define STORM_RELAY_REP_FAILED	1	/* the text says what failed */
#define STORM_RELAY_REP_ABSENT	2	/* a bundle of references: every node
					 * that did not place it all lacked
					 * some files, nothing else failed */
#define STORM_RELAY_MAX_ABSENT	(1u << 20)
typedef struct storm_relay_rep {
	uint32_t magic;
	uint32_t status;	/* STORM_RELAY_REP_* */
	uint32_t msg_len;
	uint32_t absent_len;	/* ABSENT: the union's bitmap follows the
				 * text (0: unknown, send every file) */
} storm_relay_rep_t;

/* States in the low byte of the variable; the key is in the upper bits, so
 * a value from an older transfer never matches. */
enum storm_bcast_state {
	STORM_BCAST_READY = 0x01,	/* manifest accepted, file prepared */
	STORM_BCAST_DONE = 0x02,	/* file complete and in place */
	STORM_BCAST_EPERM = 0x11,	/* credential or job check failed */
	STORM_BCAST_ENOSPC = 0x12,	/* does not fit in the node's tmpfs */
	STORM_BCAST_EFBIG = 0x13,	/* larger than BcastMaxSize */
	STORM_BCAST_EIO = 0x14,		/* could not create or write it */
	STORM_BCAST_EBADMSG = 0x15,	/* checksum mismatch */
	STORM_BCAST_ABORTED = 0x16,	/* the transfer was aborted */
	STORM_BCAST_EBADTREE = 0x17,	/* a bundle that cannot be extracted */
	STORM_BCAST_ABSENT = 0x18,	/* a bundle's references this node's
					 * cache does not hold: the sender
					 * sends the files themselves */
};
#define STORM_BCAST_VAL(key, st) \
	((((uint64_t) (key) & STORM_BCAST_KEY_MASK) << 8) | (uint64_t) (st))

static inline const char *storm_bcast_state_str(int st)
{
	switch (st) {
	case STORM_BCAST_READY: return "ready";
	case STORM_BCAST_DONE: return "done";
	case STORM_BCAST_EPERM:
		return "refused: not authorized (credential, job owner or node membership)";
	case STORM_BCAST_ENOSPC:
		return "No space left on device (node-local BcastDir)";
	case STORM_BCAST_EFBIG: return "File too large (BcastMaxSize)";
	case STORM_BCAST_EIO: return "cannot create the file on the node";
	case STORM_BCAST_EBADMSG: return "checksum mismatch";
	case STORM_BCAST_ABORTED: return "transfer aborted";
	case STORM_BCAST_EBADTREE:
		return "the files cannot be laid out on the node (malformed bundle or a name the node refuses)";
	case STORM_BCAST_ABSENT:
		return "some of the files are not in the node's cache";
	}
	return "no answer";
}

/*
 * The checksum bound into the credential: XXH3, 64 bits (xxHash, inlined).
 * It guards against corruption and forged chunks; it is not a MAC (the
 * munge credential is what authenticates).  srun hashes the file, the
 * relay hashes it before it multicasts, and every node hashes its copy
 * before it renames it into place, so its speed is on the launch path:
 * XXH3 runs at memory speed, several times the multiply-xor lanes it
 * replaced, which shortens the relay's wait for every node's verified
 * copy (STORM_RELAY_MAGIC changed with it).
 */
static inline uint64_t storm_bcast_hash(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

/* A file name the NM accepts: no path, no leading dot, printable. */
static inline int storm_bcast_name_ok(const char *s)
{
	size_t n = 0;

	if (!s || !s[0] || s[0] == '.')
		return 0;
	for (; s[n]; n++)
		if (s[n] == '/' || (unsigned char) s[n] <= ' ' ||
		    (unsigned char) s[n] >= 0x7f)
			return 0;
	return n < 200;
}

#endif /* STORM_BCAST_H */
