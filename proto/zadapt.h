/*
 * ferry's adaptive compression rule: which setting the compressor runs at,
 * decided window by window from what the sender measured. Pure logic (no
 * clocks, no I/O), so every decision can be replayed in a unit test.
 *
 * Each algorithm has a ladder of settings, rung 0 being the normal level
 * (rsync's default or --compress-level), the last rung "store": data goes
 * out with no compression effort (zlib level 0 = stored blocks, zstd's
 * fastest level = raw blocks, lz4 literal-only blocks). Every setting on a
 * ladder is one the receiving rsync decodes without knowing it changed.
 *
 * Two reasons move the compressor off rung 0:
 *  - the data does not compress: a window whose output is more than
 *    ZADAPT_INCOMPRESSIBLE_PCT % of its input goes to "store" until a
 *    cheap sample of later data (lz4 on the last ZADAPT_SAMPLE bytes of
 *    every ZADAPT_STORE_WINDOW) compresses below ZADAPT_COMPRESSIBLE_PCT %;
 *    a new file starts afresh;
 *  - the compressor, not the link, is the bottleneck: in a window (at
 *    least ZADAPT_WINDOW bytes, across files) where the compressor's CPU
 *    time was more than ZADAPT_CPU_BOUND times the time the sender spent
 *    waiting for the link (writes blocked on a full socket or pipe; with
 *    --bwlimit, the time the rate allots to the bytes written), go one
 *    rung down; where the waiting took more than
 *    ZADAPT_LINK_BOUND times the compressing, go one rung back up. A
 *    compressor that took in more than 1 MiB per ZADAPT_FAST_NS_PER_MIB
 *    (about 2 GB/s: zero pages, long runs, which every level compresses
 *    that fast and to almost nothing) is never the bottleneck, however
 *    little the link waited for its few output bytes. A step
 *    up that has to be taken back makes the next one wait twice as long
 *    (at most ZADAPT_MAX_HOLD windows), so the level does not flap.
 */
#ifndef FERRY_ZADAPT_H
#define FERRY_ZADAPT_H

#include <stdbool.h>
#include <stdint.h>

/* Bytes of literal data per window; a file's first window is shorter so
 * incompressible files are found early. */
#define ZADAPT_WINDOW (1024 * 1024)
#define ZADAPT_FIRST_WINDOW (64 * 1024)
/* While storing incompressible data, the sample is taken this often, so
 * compressible data after it waits at most this long. */
#define ZADAPT_STORE_WINDOW (64 * 1024)
/* The speed is judged over at least ZADAPT_WINDOW bytes of literal data
 * that came out as at least ZADAPT_SPEED_OUT compressed bytes (the output
 * goes to the link in buffers of 256 KiB, so the waiting comes in lumps),
 * or over ZADAPT_SPEED_MAX_IN bytes if the data compresses that well. */
#define ZADAPT_SPEED_OUT (1024 * 1024)
#define ZADAPT_SPEED_MAX_IN (8 * 1024 * 1024)
#define ZADAPT_INCOMPRESSIBLE_PCT 97
#define ZADAPT_COMPRESSIBLE_PCT 90
#define ZADAPT_SAMPLE (8 * 1024)
#define ZADAPT_CPU_BOUND 4
/* ... and this far over, two rungs at once */
#define ZADAPT_CPU_FAR 16
#define ZADAPT_LINK_BOUND 2
#define ZADAPT_FAST_NS_PER_MIB 500000
#define ZADAPT_MAX_HOLD 64
/* Windows whose compressing took less than this are not evidence of
 * anything (tiny windows at the end of files). */
#define ZADAPT_MIN_NS 500000

#define ZADAPT_MAX_RUNGS 8

struct zadapt {
	/* configuration (set by zadapt_init) */
	int alg;                        /* CPRES_* */
	bool adaptive;                  /* false: rung 0 always (--compress-level) */
	int nrungs;                     /* rungs[nrungs-1] is "store" */
	int rungs[ZADAPT_MAX_RUNGS];    /* zstd/zlib level, lz4 acceleration */

	/* state */
	int rung;          /* the speed rung */
	bool incompressible; /* this file's data is being stored for that reason */
	bool last_up;      /* the last move was a step up */
	int hold;          /* windows to wait before the next step up */
	int backoff;       /* what hold is set to after a step down */
	int changes;       /* setting changes so far (for tests and --debug) */
};

/* What the sender saw during one window. */
struct zadapt_window {
	uint64_t in;          /* literal bytes given to the compressor */
	uint64_t out;         /* compressed bytes that came out */
	bool timed;           /* comp_ns and wait_ns cover at least
			       * ZADAPT_WINDOW bytes: judge the speed */
	uint64_t bytes;       /* literal bytes (all files) those times cover */
	uint64_t comp_ns;     /* CPU time spent compressing */
	uint64_t wait_ns;     /* time spent waiting for the link */
	uint64_t sample_in;   /* while storing: a sample's size ... */
	uint64_t sample_out;  /* ... and what a fast compressor made of it */
};

/* `level`: the normal level as resolved by token_resolve_level (for lz4:
 * ignored, acceleration 1). zstd_min: ZSTD_minCLevel(). */
void zadapt_init(struct zadapt *z, int alg, int level, bool adaptive, int zstd_min);
/* A new file: its data is presumed compressible until seen. */
void zadapt_file_begin(struct zadapt *z);
/* Account for one window; returns true if the setting changed. */
bool zadapt_window_end(struct zadapt *z, const struct zadapt_window *w);
/* The setting to run at now (zstd/zlib level, lz4 acceleration). */
int zadapt_setting(const struct zadapt *z);
/* Is the current setting "no compression effort"? */
bool zadapt_storing(const struct zadapt *z);

#endif
