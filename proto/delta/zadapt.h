/*
 * ferry's adaptive compression rule: which setting the compressor runs at,
 * decided window by window from what the sender measured. Pure logic (no
 * clocks, no I/O), so every decision can be replayed in a unit test.
 *
 * Each algorithm has a ladder of settings, ordered from the most effort to
 * none: a higher level where the algorithm has one, the normal level
 * (rsync's default), faster levels, and "store" last: data goes out with
 * no compression effort (zlib level 0 = stored blocks, zstd raw blocks in
 * frames of our own, lz4 literal-only blocks). Every setting on a ladder
 * is one the receiving rsync decodes without knowing it changed.
 *
 * Two reasons move the compressor off the normal level:
 *  - the data does not compress: a window whose output is more than
 *    ZADAPT_INCOMPRESSIBLE_PCT % of its input goes to "store" until a
 *    cheap sample of later data (lz4 on the last ZADAPT_SAMPLE bytes of
 *    every ZADAPT_STORE_WINDOW) compresses below ZADAPT_COMPRESSIBLE_PCT %;
 *    a new file starts afresh;
 *  - another setting moves more input per second of wall time. A setting
 *    costs, per MiB of input, about
 *        max(compress time + other sender work, output bytes / link rate)
 *    (the compressor and the link work in parallel; the slower one sets
 *    the pace; the faster one adds 1/ZADAPT_OVERLAP of itself). Where
 *    the compressor runs on its own thread (token_pipe.h) and waited
 *    there for the sender's reading and matching, that wait counts with
 *    the current setting's time, and a setting of more effort fills it
 *    first: its time is the larger of its own and the current pace.
 *    Each timed window (at least ZADAPT_WINDOW bytes, across files)
 *    measures the current setting's compress time and ratio, the
 *    sender's other work, and the link: a window in which the sender was
 *    blocked on the link for at least 1/ZADAPT_SATURATED of its wall time,
 *    or that began and ended with ZADAPT_BACKLOG_SATURATED bytes or more
 *    waiting in the socket's send queue, saw the link saturated, so the
 *    bytes that left (the output, less what the queue grew by) per wall
 *    time is its rate (the median of the last ZADAPT_LINK_SAMPLES such
 *    windows, known from two on, so that one stall of the receiver's is
 *    not taken for the link); a window that neither blocked nor left a
 *    backlog says nothing (socket buffers take in megabytes). But a
 *    receiver that stalls (writing to disk) blocks the sender too, for a
 *    time that grows with input bytes, not output: a setting that sends
 *    few bytes then sees only the stalls blocking it and takes the link
 *    for a slow one. So the link is never taken slower than a setting
 *    measured within ZADAPT_CAP_AGE windows moved its output in most of
 *    its windows (the median of its last ZADAPT_CAP_WINDOWS, blocked or
 *    not; counting the bytes that left, where the backlog is known): "store" sending 1 MiB in 0.5 ms in most windows shows a link
 *    of 0.5 ms per MiB or less, whatever the stalls made zstd's few
 *    bytes wait.
 *
 * The decision: move to a setting whose cost, from fresh measurements
 * (taken within ZADAPT_STALE timed windows), beats the current one by
 * more than 1/ZADAPT_MARGIN and ZADAPT_MIN_GAIN_NS ns per MiB. Where a
 * neighbouring setting has no fresh measurement, its cost is guessed
 * (from its old measurement, else from the current setting's by the
 * ZADAPT_STEP_* factors) and, if that looks better by ZADAPT_MIN_GAIN_NS,
 * it is tried (a probe); "store" is probed the same way while the link's
 * rate is unknown and no window has yet been saturated (it needs no guess
 * about the data, only about the link), unless the sender knows that
 * less than ZADAPT_STORE_PROBE_MIN_LEFT of input is still to come: the
 * probe sends a trial's windows whole, which on a slow link costs more
 * than storing can save on the little that is left (a 16 MiB WAL segment
 * that compresses 35 to 1: 3.9 MB on the wire instead of 0.47 MB, five
 * times the wall time at 100 Mbit/s). No setting that sends more
 * bytes is tried while the last window ended with the link behind (a
 * backlog of ZADAPT_BACKLOG_SATURATED bytes still waiting to leave): the
 * link does not keep up with what goes out now, so on a slow link the
 * probe of "store" is not paid for. Where TCP reports its delivery
 * rate at the end of a window that left ZADAPT_RATE_QUEUED bytes queued
 * (so the sender was not what held the link back), that rate is a link
 * sample of its own: the link is known before any window blocked. It is
 * the last round trip's rate, though: it counts only where the window's
 * output left (ZADAPT_MIN_LEFT bytes or more acknowledged), and as no
 * slower than that output left (a receiver that paused can make TCP's
 * rate slower). A backlog or a block that the receiver's window made
 * (TCP says so: a receiver busy writing or checksumming, as on loopback)
 * times no link, and such a window's rate is no sample; but it is how
 * fast the receiver takes data in (held_ns): "store" is not probed
 * against it where it would lose at that rate, and a probe of store ends
 * in the first window it shows store losing (rsync's receiver, on the
 * sender's two cores, took 87 ms per MiB on a 100 Mbit/s link with every
 * window so marked, and each probe sent 2 to 4 MiB whole; a loopback
 * receiver that stalls is still delivered to at 1 to 2 ms per MiB).
 * With --bwlimit the rate is the link's floor, known from the start: its
 * sleeps come in lumps of 0.1 s, between which output seems to leave at
 * once, so no window's timing may make the link faster than the rate.
 *
 * Every move is judged after ZADAPT_TRIAL windows: kept only if it beats
 * the setting it left by the margin, else taken back, and then the next
 * move waits: the hold doubles, up to ZADAPT_MAX_HOLD windows; a move
 * that is kept halves it. So the level settles instead of flapping,
 * and of two settings close in cost the one it had stays. A probe of
 * "store" ends sooner, in the first window TCP's delivery rate shows it
 * losing: on a slow link each more window sends a MiB whole for nothing.
 *
 * zstd has a second, independent choice: "wide", a window of
 * 2^ZADAPT_WIDE_LOG bytes with long-distance matching, where the normal
 * levels keep 2^21 or less. It finds what repeats megabytes apart (the
 * template databases of a PGDATA, a WAL segment after the table it
 * logged): 30 % fewer bytes there, and about the same (a percent more or
 * less) on data without such repeats, for 1 to 2.5 ms more compress time
 * per MiB. It is on while the link is slow (ZADAPT_WIDE_LINK_NS or more
 * per MiB; one sample is enough), off when it is not. A toggle or a level
 * change ends the zstd frame, and with it the window that finds the long
 * matches, so on a slow link wide mode starts where the compressor keeps
 * up (the current level, or the first faster one down to the level below
 * the normal one, zstd's fast matcher, that keeps up with the link with
 * an eighth to spare, ZADAPT_WIDE_EXTRA_NS and the sender's other work
 * counted: the test it then stays by, so that the start is no knife edge
 * between two levels), and then moves only to a faster level while the
 * compressor falls behind the link by an eighth, or to one of more
 * effort that would keep up with an eighth to spare, on a guess only if
 * it looks better by the margin; never to store.
 * Decoders allocate the window, so the receiver (ferry or rsync, both
 * accept 2^27) holds up to 2^ZADAPT_WIDE_LOG bytes more: a price paid
 * only on a slow link.
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

/* "store" is not probed against an unknown link where less input than
 * this is still to come (the probe's input, eight times over). */
#define ZADAPT_STORE_PROBE_MIN_LEFT (8 * ZADAPT_TRIAL * ZADAPT_WINDOW)

/* Compressing and sending overlap but not perfectly: the smaller of the
 * two adds 1/ZADAPT_OVERLAP of itself to a setting's cost. */
#define ZADAPT_OVERLAP 8
/* Blocked on the link for at least 1/ZADAPT_SATURATED of the window. */
#define ZADAPT_SATURATED 4
/* ... or at least this many bytes waited in the socket's send queue at
 * both ends of the window (the link, not the sender, set the pace) */
#define ZADAPT_BACKLOG_SATURATED (256 * 1024)
/* TCP's delivery rate times the link where at least this many bytes
 * still wait in the send queue when a window ends (the sender was not
 * what held the link back). */
#define ZADAPT_RATE_QUEUED (64 * 1024)
/* A window whose output left in fewer bytes than this does not time the
 * link (too coarse). */
#define ZADAPT_MIN_LEFT (64 * 1024)
/* The link's time is the median of this many saturated windows (known
 * from two on). */
#define ZADAPT_LINK_SAMPLES 3
/* A setting bounds the link by the median of its last ZADAPT_CAP_WINDOWS
 * windows' time per MiB of output (once it has ZADAPT_CAP_MIN of them:
 * the first ones after a move go into socket buffers), for
 * ZADAPT_CAP_AGE timed windows after it was last measured. */
#define ZADAPT_CAP_WINDOWS 8
#define ZADAPT_CAP_MIN 5
#define ZADAPT_CAP_AGE 256
/* A move must gain more than 1/ZADAPT_MARGIN of the current cost ... */
#define ZADAPT_MARGIN 8
/* ... and more than this many ns per MiB of input (a compressor working
 * at 4 GB/s, zero pages, is nobody's bottleneck) */
#define ZADAPT_MIN_GAIN_NS 250000
/* A measurement older than this many timed windows is a guess again. */
#define ZADAPT_STALE 8
/* A move is judged after this many windows at the new setting. */
#define ZADAPT_TRIAL 2
#define ZADAPT_MAX_HOLD 64
/* Storing costs a copy and block headers: about 10 GB/s. */
#define ZADAPT_STORE_NS_PER_MIB 100000
/* Guesses for an untried neighbour, per rung, as fractions of 16: one
 * rung faster takes 10/16 of the time for 18/16 of the output, one rung
 * more effort twice the time for 14/16 of the output. */
#define ZADAPT_STEP_FASTER_CPU 10
#define ZADAPT_STEP_FASTER_OUT 18
#define ZADAPT_STEP_SLOWER_CPU 32
#define ZADAPT_STEP_SLOWER_OUT 14
/* Ratios are in 1/ZADAPT_RATIO_ONE of the input. */
#define ZADAPT_RATIO_ONE 65536u

#define ZADAPT_MAX_RUNGS 8

/* zstd's wide mode: a setting of ZADAPT_WIDE + level is that level with
 * a window of 2^ZADAPT_WIDE_LOG bytes and long-distance matching (zstd
 * levels stay far below ZADAPT_WIDE / 2). */
#define ZADAPT_WIDE 1000
#define ZADAPT_WIDE_LOG 26
#define ZADAPT_WIDE_HASH_RATE 8
/* On a link that takes this long per MiB (25 MB/s, about 200 Mbit/s, or
 * slower): there the bytes matter more than the cost model can say of a
 * mode whose gain depends on the data far back. (TCP's delivery rate on
 * a 1 Gbit/s link was seen as low as 22 ms per MiB while little was
 * queued.) */
#define ZADAPT_WIDE_LINK_NS (40 * 1000000u)
/* What long-distance matching adds to a level's compress time, per MiB
 * (1 to 2.5 ms measured on the project's 2-core test machine). */
#define ZADAPT_WIDE_EXTRA_NS (2 * 1000000u)

static inline bool zadapt_is_wide(int setting)
{
	return setting > ZADAPT_WIDE / 2;
}

/* The compression level of a setting, wide or not. */
static inline int zadapt_level(int setting)
{
	return zadapt_is_wide(setting) ? setting - ZADAPT_WIDE : setting;
}

/* What was measured of one setting. */
struct zadapt_rung {
	uint64_t ns_per_mib;  /* compress time per MiB of input */
	uint32_t ratio;       /* output per input, ZADAPT_RATIO_ONE = 1 */
	int age;              /* timed windows since measured */
	bool seen;
	/* wall ns per MiB of output of its last timed windows, newest
	 * first: the rate it moved its output at, blocked or not */
	uint64_t out_ns[ZADAPT_CAP_WINDOWS];
	int nout;
};

struct zadapt {
	/* configuration (set by zadapt_init) */
	int alg;                        /* CPRES_* */
	bool adaptive;                  /* false: the normal level always (--compress-level) */
	int nrungs;                     /* rungs[nrungs-1] is "store" */
	int normal;                     /* the rung of the normal level */
	int rungs[ZADAPT_MAX_RUNGS];    /* zstd/zlib level, lz4 acceleration */

	/* state */
	int rung;          /* the speed rung */
	bool incompressible; /* this file's data is being stored for that reason */
	struct zadapt_rung stat[ZADAPT_MAX_RUNGS];
	uint64_t other_ns_per_mib; /* the sender's work besides compressing */
	uint64_t idle_ns_per_mib;  /* the compressor thread's waits for data */
	uint64_t link_ns_per_mib;  /* the link's time per MiB of output: an
				    * estimate if link_known, else at most */
	bool link_known;   /* saturated windows measured the link */
	uint64_t link_samples[ZADAPT_LINK_SAMPLES]; /* the last ones, newest first */
	int nlink;         /* samples in link_samples */
	bool behind;       /* the last timed window ended with a backlog of
			    * ZADAPT_BACKLOG_SATURATED bytes or more */
	uint64_t held_ns;  /* the last timed window's time per MiB as TCP
			    * delivered it while the receiver's window held
			    * the output back (no link sample); 0: none */
	int came_from;     /* the rung before the last move, -1: none */
	int probing;       /* windows left to measure the last move by */
	int hold;          /* windows to wait before the next move */
	int backoff;       /* what hold is set to after a move taken back */
	int changes;       /* setting changes so far (for tests and --debug) */
	uint64_t link_floor_ns; /* the link is never faster (--bwlimit); 0: none */
	bool left_known;   /* the last window said how much input is to come */
	uint64_t left;     /* that much, at most */
	bool can_widen;    /* zstd, adapting */
	bool wide;         /* zstd's wide mode is on */
	int wide_hold;     /* windows before wide may be turned on again */
	int wide_backoff;  /* what wide_hold is set to when it is turned off */
};

/* What the sender saw during one window. */
struct zadapt_window {
	uint64_t in;          /* literal bytes given to the compressor */
	uint64_t out;         /* compressed bytes that came out */
	bool timed;           /* the times cover at least ZADAPT_WINDOW bytes:
			       * judge the speed */
	uint64_t bytes;       /* literal bytes (all files) those times cover */
	uint64_t sent;        /* compressed bytes sent in that time */
	uint64_t comp_ns;     /* CPU time spent compressing */
	uint64_t wait_ns;     /* time spent waiting for the link */
	uint64_t wall_ns;     /* wall time of it all (0: comp_ns + wait_ns) */
	uint64_t idle_ns;     /* of which the compressor, on its own thread,
			       * waited for the sender's data (token_pipe.h) */
	/* What had not left this host yet (ferry's buffer + the socket's
	 * send queue) when the timed window began and ended, if readable:
	 * the link moved sent + backlog0 - backlog1 bytes, however much the
	 * socket's buffers took in without blocking. */
	bool backlog_known;
	uint64_t backlog0, backlog1;
	uint64_t sockq0, sockq1; /* of which in the socket's send queue:
				  * the link's backlog, not ferry's buffer */
	/* The receiver's window, not the link, held the output back for
	 * 1/ZADAPT_SATURATED of the window or more (TCP's rwnd_limited): a
	 * backlog then says nothing about the link. */
	bool receiver_limited;
	/* The link's time per MiB from TCP's own delivery rate, taken at
	 * the end of a window that left the link a queue (not limited by
	 * the sender or the receiver); 0: none. */
	uint64_t delivery_ns_per_mib;
	/* Input still to come after this window, at most (this file's rest
	 * and the later files'), where the sender knows it. */
	bool left_known;
	uint64_t left;
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
/* The setting to run at now (zstd/zlib level, lz4 acceleration; zstd's
 * wide mode adds ZADAPT_WIDE). */
int zadapt_setting(const struct zadapt *z);
/* Is the current setting "no compression effort"? */
bool zadapt_storing(const struct zadapt *z);
/* Take the link as known to need `ns_per_mib` per MiB, as two samples
 * would have shown (tests, where the output goes to memory and never
 * waits). */
void zadapt_assume_link(struct zadapt *z, uint64_t ns_per_mib);
/* The output can never go faster than `ns_per_mib` per MiB (--bwlimit):
 * the link is known to be at least that slow from the start, and no
 * window's timing says otherwise (the rate's sleeps come in lumps of
 * 0.1 s, so between them the output seems to leave at once). */
void zadapt_link_floor(struct zadapt *z, uint64_t ns_per_mib);
/* The estimated cost of rung r in ns per MiB of input, from what was
 * measured (a guess where nothing fresh was; see zadapt.h). For tests
 * and --debug. */
uint64_t zadapt_cost(const struct zadapt *z, int r);

#endif
