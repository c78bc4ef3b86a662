/*
 * ferry's adaptive compression rule (see zadapt.h for the rule itself).
 */
#include "proto/delta/zadapt.h"

#include <string.h>

#include "proto/delta/token.h"

#define MIB 1048576u

/* Settings around the normal level. Higher: more effort, used where the
 * link is slow enough that fewer output bytes pay for the time (zstd's
 * levels up to 6 keep its fast matcher's window; zlib's 9 is its most).
 * Faster, fastest last; the store rung is appended after them: zstd's
 * negative levels and lz4's accelerations trade ratio for speed; zlib
 * levels 1-3 use deflate's fast matcher, 4-9 the lazy one. */
static const int zstd_higher[] = {6};
static const int zlib_higher[] = {9};
static const int zstd_steps[] = {1, -1, -4, -10};
static const int zlib_steps[] = {3, 1};
static const int lz4_steps[] = {4, 16, 64};

struct ladder {
	const int *higher, *faster;
	size_t nhigher, nfaster;
	int store;
};

#define LEN(a) (sizeof(a) / sizeof *(a))

static struct ladder ladder_of(int alg, int zstd_min)
{
	switch (alg) {
	case CPRES_ZSTD:
		return (struct ladder){zstd_higher, zstd_steps, LEN(zstd_higher), LEN(zstd_steps),
				       zstd_min};
	case CPRES_ZLIB:
	case CPRES_ZLIBX:
		return (struct ladder){zlib_higher, zlib_steps, LEN(zlib_higher), LEN(zlib_steps), 0};
	case CPRES_LZ4: /* acceleration; 0: literal-only blocks */
		return (struct ladder){NULL, lz4_steps, 0, LEN(lz4_steps), 0};
	default:
		return (struct ladder){NULL, NULL, 0, 0, 0};
	}
}

static void add_rung(struct zadapt *z, int setting)
{
	if (z->nrungs < ZADAPT_MAX_RUNGS)
		z->rungs[z->nrungs++] = setting;
}

/* Does setting a take more effort than b? (lz4: a lower acceleration) */
static bool more_effort(int alg, int a, int b)
{
	return alg == CPRES_LZ4 ? a < b : a > b;
}

void zadapt_init(struct zadapt *z, int alg, int level, bool adaptive, int zstd_min)
{
	struct ladder l = ladder_of(alg, zstd_min);

	memset(z, 0, sizeof *z);
	z->alg = alg;
	z->adaptive = adaptive;
	z->backoff = 1;
	z->wide_backoff = 1;
	z->came_from = -1;
	z->can_widen = adaptive && alg == CPRES_ZSTD;
	if (alg == CPRES_LZ4)
		level = 1;
	if (adaptive)
		for (size_t i = 0; i < l.nhigher; i++)
			if (more_effort(alg, l.higher[i], level))
				add_rung(z, l.higher[i]);
	z->normal = z->rung = z->nrungs;
	add_rung(z, level);
	for (size_t i = 0; i < l.nfaster; i++)
		if (more_effort(alg, level, l.faster[i]))
			add_rung(z, l.faster[i]);
	if (alg != CPRES_NONE && z->rungs[z->nrungs - 1] != l.store)
		add_rung(z, l.store);
}

void zadapt_file_begin(struct zadapt *z)
{
	z->incompressible = false;
}

int zadapt_setting(const struct zadapt *z)
{
	if (z->incompressible || z->rung == z->nrungs - 1)
		return z->rungs[z->nrungs - 1];
	return z->rungs[z->rung] + (z->wide ? ZADAPT_WIDE : 0);
}

bool zadapt_storing(const struct zadapt *z)
{
	return z->nrungs > 1 && (z->incompressible || z->rung == z->nrungs - 1);
}

/* The data side: store what does not compress, resume when a sample
 * compresses again. */
static void judge_data(struct zadapt *z, const struct zadapt_window *w)
{
	if (!z->incompressible) {
		/* only a window that was really compressed tells us anything */
		if (z->rung == z->nrungs - 1 || w->in == 0)
			return;
		if (w->out * 100 > w->in * ZADAPT_INCOMPRESSIBLE_PCT)
			z->incompressible = true;
		return;
	}
	if (w->sample_in && w->sample_out * 100 < w->sample_in * ZADAPT_COMPRESSIBLE_PCT)
		z->incompressible = false;
}

/* ------------------------------------------------------- the speed side */

static bool is_store(const struct zadapt *z, int r)
{
	return r == z->nrungs - 1;
}

static bool fresh(const struct zadapt *z, int r)
{
	return z->stat[r].seen && z->stat[r].age <= ZADAPT_STALE;
}

/* Rung r as measured, or as guessed from the current rung (*guess set).
 * Store needs no guess about the data, only about the link. */
static struct zadapt_rung estimate(const struct zadapt *z, int r, bool *guess)
{
	struct zadapt_rung e = z->stat[z->rung];

	*guess = false;
	if (is_store(z, r)) {
		*guess = !z->link_known;
		return (struct zadapt_rung){.ns_per_mib = ZADAPT_STORE_NS_PER_MIB,
					    .ratio = ZADAPT_RATIO_ONE, .seen = true};
	}
	if (fresh(z, r))
		return z->stat[r];
	*guess = true;
	if (z->stat[r].seen) /* measured long ago: the data may have changed */
		return z->stat[r];
	for (int i = z->rung; i < r; i++) {
		e.ns_per_mib = e.ns_per_mib * ZADAPT_STEP_FASTER_CPU / 16;
		e.ratio = (uint32_t)((uint64_t)e.ratio * ZADAPT_STEP_FASTER_OUT / 16);
	}
	for (int i = z->rung; i > r; i--) {
		e.ns_per_mib = e.ns_per_mib * ZADAPT_STEP_SLOWER_CPU / 16;
		e.ratio = (uint32_t)((uint64_t)e.ratio * ZADAPT_STEP_SLOWER_OUT / 16);
	}
	if (e.ratio > ZADAPT_RATIO_ONE)
		e.ratio = ZADAPT_RATIO_ONE;
	return e;
}

/* The median of a setting's last windows' time per MiB of output. */
static uint64_t out_median(const struct zadapt_rung *s)
{
	uint64_t v[ZADAPT_CAP_WINDOWS];

	for (int i = 0; i < s->nout; i++) {
		int j = i;
		for (; j > 0 && v[j - 1] > s->out_ns[i]; j--)
			v[j] = v[j - 1];
		v[j] = s->out_ns[i];
	}
	return v[s->nout / 2];
}

/* The link's time per MiB of output as the rule believes it: what the
 * saturated windows showed, but never slower than a setting measured
 * lately moved its output in most windows (see zadapt.h: the receiver's
 * stalls block a setting that sends few bytes as long as one that sends
 * many, and only the stalls block it). */
static uint64_t link_time(const struct zadapt *z)
{
	uint64_t link = z->link_ns_per_mib;

	for (int r = 0; r < z->nrungs; r++) {
		const struct zadapt_rung *s = &z->stat[r];
		if (s->age > ZADAPT_CAP_AGE || s->nout < ZADAPT_CAP_MIN)
			continue;
		uint64_t m = out_median(s);
		if (m < link)
			link = m;
	}
	return link > z->link_floor_ns ? link : z->link_floor_ns;
}

/* max(compressing + the rest of the sender's work, the link's time for
 * the output), plus 1/ZADAPT_OVERLAP of the smaller: the two overlap
 * only as far as the buffers between them allow, so of two settings
 * close in cost the one that sends fewer bytes wins. A guess for store
 * while the link is unknown takes the link as free: that is what the
 * probe finds out. */
static uint64_t cost_at(const struct zadapt *z, const struct zadapt_rung *e, uint64_t link_ns)
{
	uint64_t cpu = e->ns_per_mib + z->other_ns_per_mib + z->idle_ns_per_mib;
	uint64_t cur = z->stat[z->rung].ns_per_mib;
	/* more effort than now fills the compressor thread's waits first */
	if (e->ns_per_mib > cur) {
		uint64_t pace = cur + z->other_ns_per_mib + z->idle_ns_per_mib;
		cpu = e->ns_per_mib + z->other_ns_per_mib;
		if (cpu < pace)
			cpu = pace;
	}
	uint64_t link = e->ratio * link_ns / ZADAPT_RATIO_ONE;

	return cpu > link ? cpu + link / ZADAPT_OVERLAP : link + cpu / ZADAPT_OVERLAP;
}

static uint64_t cost_of(const struct zadapt *z, const struct zadapt_rung *e, bool guess_link)
{
	return cost_at(z, e, guess_link ? 0 : link_time(z));
}

uint64_t zadapt_cost(const struct zadapt *z, int r)
{
	bool guess;
	struct zadapt_rung e = estimate(z, r, &guess);

	return cost_of(z, &e, guess && is_store(z, r));
}

static uint64_t ewma(uint64_t old, uint64_t sample, bool have_old)
{
	return have_old ? (old + sample) / 2 : sample;
}

/* A saturated window's time per MiB of output. One window can be a stall
 * of the receiver's (a disk flush, a busy machine) rather than the link:
 * the link is known from ZADAPT_LINK_SAMPLES such windows on, its time the
 * median of the last ones (the mean of two). */
static void link_sample(struct zadapt *z, uint64_t ns_per_mib)
{
	uint64_t *v = z->link_samples;

	if (ns_per_mib < z->link_floor_ns)
		ns_per_mib = z->link_floor_ns;
	memmove(v + 1, v, (ZADAPT_LINK_SAMPLES - 1) * sizeof *v);
	v[0] = ns_per_mib;
	if (z->nlink < ZADAPT_LINK_SAMPLES)
		z->nlink++;
	if (z->nlink < 2) {
		z->link_ns_per_mib = ns_per_mib;
		return;
	}
	z->link_known = true;
	if (z->nlink == 2) {
		z->link_ns_per_mib = (v[0] + v[1]) / 2;
		return;
	}
	uint64_t a = v[0], b = v[1], c = v[2];
	z->link_ns_per_mib = a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

/* Keep a window's time per MiB of output among the setting's last. */
static void out_sample(struct zadapt_rung *s, uint64_t ns_per_mib)
{
	memmove(s->out_ns + 1, s->out_ns, (ZADAPT_CAP_WINDOWS - 1) * sizeof *s->out_ns);
	s->out_ns[0] = ns_per_mib;
	if (s->nout < ZADAPT_CAP_WINDOWS)
		s->nout++;
}

/* The window's output bytes that left this host: what was sent, less
 * what the send queue grew by (or plus what it shrank by). */
static uint64_t bytes_left(const struct zadapt_window *w)
{
	if (!w->backlog_known)
		return w->sent;
	uint64_t out = w->sent + w->backlog0;
	return out > w->backlog1 ? out - w->backlog1 : 0;
}

/* The link's side of a timed window of `wall` ns at rung s: is it
 * behind, how fast did s's output leave, and, if the window shows it,
 * the link's rate (true: TCP's delivery rate timed it). Where the
 * receiver's window held the output back, TCP's rate is no link sample
 * (a receiver that stalls), but is kept as held_ns. */
static bool measure_link(struct zadapt *z, struct zadapt_rung *s, const struct zadapt_window *w,
			 uint64_t wall)
{
	z->behind = w->backlog_known && !w->receiver_limited &&
		    w->sockq1 >= ZADAPT_BACKLOG_SATURATED;
	uint64_t left = bytes_left(w);
	bool timed = left >= ZADAPT_MIN_LEFT && wall > 0;
	uint64_t left_ns = timed ? wall * MIB / left : 0;
	bool timed_link = false;
	z->held_ns = 0;
	if (w->delivery_ns_per_mib && w->receiver_limited && timed)
		z->held_ns = left_ns < w->delivery_ns_per_mib ? left_ns : w->delivery_ns_per_mib;
	if (w->delivery_ns_per_mib && !w->receiver_limited && timed) {
		/* TCP's rate is one round trip's, the last it measured: not
		 * this window's unless the window's output left (acknowledged
		 * bytes), and a receiver that paused to write can make it
		 * claim a link slower than the one that output left by,
		 * which is what it is held to */
		uint64_t rate = w->delivery_ns_per_mib;
		link_sample(z, left_ns < rate ? left_ns : rate);
		timed_link = true;
	}
	if (!timed)
		return false; /* too little output to time the link by */
	out_sample(s, left_ns);
	/* Only a saturated window times the link. One that did not block
	 * and left no backlog shows no bound worth having: the socket's
	 * buffers (megabytes) take in a window's output faster than any
	 * link. */
	bool backlogged = z->behind && w->sockq0 >= ZADAPT_BACKLOG_SATURATED;
	bool blocked = w->wait_ns * ZADAPT_SATURATED >= wall && !w->receiver_limited;
	if (!timed_link && (blocked || backlogged))
		link_sample(z, left_ns);
	return timed_link;
}

/* Take in a timed window's measurements: the current rung's compress
 * time and ratio, the sender's other work, and the link (true: TCP's
 * delivery rate timed it). */
static bool measure(struct zadapt *z, const struct zadapt_window *w)
{
	struct zadapt_rung *s = &z->stat[z->rung];
	uint64_t wall = w->wall_ns ? w->wall_ns : w->comp_ns + w->wait_ns;
	uint64_t ratio = w->sent * ZADAPT_RATIO_ONE / w->bytes;
	bool was_seen = s->seen;

	if (ratio > 2 * ZADAPT_RATIO_ONE)
		ratio = 2 * ZADAPT_RATIO_ONE;
	for (int r = 0; r < z->nrungs; r++)
		if (z->stat[r].age <= ZADAPT_CAP_AGE)
			z->stat[r].age++;
	s->ns_per_mib = ewma(s->ns_per_mib, w->comp_ns * MIB / w->bytes, was_seen);
	s->ratio = (uint32_t)ewma(s->ratio, ratio, was_seen);
	s->seen = true;
	s->age = 0;
	uint64_t busy = w->comp_ns + w->wait_ns;
	uint64_t rest = wall > busy ? wall - busy : 0;
	uint64_t idle = w->idle_ns < rest ? w->idle_ns : rest;
	z->other_ns_per_mib = ewma(z->other_ns_per_mib, (rest - idle) * MIB / w->bytes, true);
	z->idle_ns_per_mib = ewma(z->idle_ns_per_mib, idle * MIB / w->bytes, true);
	return measure_link(z, s, w, wall);
}

static bool better(uint64_t cost, uint64_t than)
{
	return cost + ZADAPT_MIN_GAIN_NS < than && cost + cost / ZADAPT_MARGIN < than;
}

/* The compressor at e (time per MiB, with the rest of the sender's work)
 * against the link's time for its output: does it keep up with an
 * eighth to spare, or fall behind by an eighth? (Between the two it
 * stays where it is.) */
static bool keeps_up(const struct zadapt *z, const struct zadapt_rung *e)
{
	uint64_t cpu = e->ns_per_mib + z->other_ns_per_mib;
	return cpu + cpu / ZADAPT_MARGIN <= e->ratio * link_time(z) / ZADAPT_RATIO_ONE;
}

static bool falls_behind(const struct zadapt *z, const struct zadapt_rung *e)
{
	uint64_t link = e->ratio * link_time(z) / ZADAPT_RATIO_ONE;
	return e->ns_per_mib + z->other_ns_per_mib > link + link / ZADAPT_MARGIN;
}

/* On a slow link wide mode is meant to stay (a move starts a new frame,
 * which loses the window that finds the long matches), so it starts
 * where the compressor keeps up: at the current level, or the first
 * faster one down to the level below the normal one (zstd's fast
 * matcher; the long matches make up for it where the data repeats far
 * apart), that keeps up with the link with an eighth to spare (measured
 * or guessed, with ZADAPT_WIDE_EXTRA_NS per MiB on top for the long
 * matches): the test wide mode then moves by. Asking for twice the time,
 * as this rule once did, put text at 100 Mbit/s (11 to 13 ms per MiB at
 * level 3 against 29 on the link) on a knife edge: level 1 in some runs,
 * 15 % more bytes. Never at more effort than now on a guess: that guess is
 * the least certain, and a receiver that stalls can make any link look
 * slow. */
static int slow_link_rung(const struct zadapt *z)
{
	int last = z->normal + 1 < z->nrungs - 1 ? z->normal + 1 : z->normal;

	if (z->rung >= last)
		return z->rung;
	for (int r = z->rung; r < last; r++) {
		bool guess;
		struct zadapt_rung e = estimate(z, r, &guess);
		e.ns_per_mib += ZADAPT_WIDE_EXTRA_NS;
		if (keeps_up(z, &e))
			return r;
	}
	return last;
}

/* Is the compressor in wide mode on a slow link, where a move costs the
 * window? */
static bool slow_wide(const struct zadapt *z)
{
	return z->wide && z->nlink > 0 && link_time(z) >= ZADAPT_WIDE_LINK_NS;
}

/* In wide mode on a slow link a move goes to a faster setting (not store)
 * only while the compressor falls behind the link, to one of more effort
 * only if that one would keep up (so the two do not take turns); and a
 * guess is tried only if it looks better by the margin (a trial that is
 * taken back costs two frames' history). */
static bool slow_wide_holds(const struct zadapt *z, int r)
{
	if (!slow_wide(z))
		return false;
	if (is_store(z, r))
		return true;
	if (r > z->rung)
		return !falls_behind(z, &z->stat[z->rung]);
	bool guess;
	struct zadapt_rung e = estimate(z, r, &guess);
	return !keeps_up(z, &e);
}

/* The cheapest rung better than the current one, counting only rungs
 * measured (guesses false) or only guessed neighbours (guesses true);
 * -1 if none. Ties go to more effort (fewer bytes). */
static int best_rung(const struct zadapt *z, bool guesses)
{
	uint64_t cur = zadapt_cost(z, z->rung);
	uint64_t best_cost = cur;
	int best = -1;

	for (int r = 0; r < z->nrungs; r++) {
		bool guess;
		if (r == z->rung)
			continue;
		estimate(z, r, &guess);
		if (guess != guesses)
			continue;
		if (guess && !is_store(z, r) && r != z->rung - 1 && r != z->rung + 1)
			continue; /* guesses reach one rung only */
		if (guess && r > z->rung && z->behind)
			continue; /* the link lags the output already: more bytes
				   * cannot go faster */
		if (guess && is_store(z, r) && z->left_known &&
		    z->left < ZADAPT_STORE_PROBE_MIN_LEFT)
			continue; /* too little left to repay the probe */
		if (slow_wide_holds(z, r))
			continue;
		uint64_t c = zadapt_cost(z, r);
		if (guess && is_store(z, r) && (z->nlink > 0 || z->held_ns)) {
			/* one saturated window is too little to count on, but
			 * enough to not try storing against it; so is TCP's
			 * rate while the receiver held the output back: store
			 * would not go faster than the receiver takes it */
			struct zadapt_rung e = estimate(z, r, &guess);
			uint64_t link = z->nlink > 0 ? link_time(z) : 0;
			if (z->held_ns > link)
				link = z->held_ns;
			c = cost_at(z, &e, link);
		}
		/* a guess needs no margin to be tried: the measurement
		 * there must have one to be kept */
		bool gain = guesses && !slow_wide(z) ? c + ZADAPT_MIN_GAIN_NS < cur
						     : better(c, cur);
		if (gain && c < best_cost)
			best = r, best_cost = c;
	}
	return best;
}

static void move_to(struct zadapt *z, int r)
{
	z->came_from = z->rung;
	z->rung = r;
	z->probing = ZADAPT_TRIAL;
}

/* The last move did not pay: go to r, and wait twice as long as last
 * time before the next. */
static void take_back(struct zadapt *z, int r)
{
	z->backoff = z->backoff * 2 > ZADAPT_MAX_HOLD ? ZADAPT_MAX_HOLD : z->backoff * 2;
	z->hold = z->backoff;
	z->came_from = z->rung;
	z->rung = r;
}

/* The measurements of every rung were taken in the other mode: they are
 * guesses from here on (what they showed of the link stays: out_ns, the
 * rate each moved its output at, bounds the link as before). */
static void forget_rungs(struct zadapt *z)
{
	for (int r = 0; r < z->nrungs; r++) {
		z->stat[r].seen = false;
		z->stat[r].ns_per_mib = 0;
		z->stat[r].ratio = 0;
	}
}

/* zstd's wide mode (see zadapt.h): on while the link is slow, off when
 * it is not. Returns true if it changed. */
static bool judge_wide(struct zadapt *z)
{
	if (!z->can_widen || z->nlink == 0 || z->probing || is_store(z, z->rung))
		return false;
	/* one sample of a slow link is enough: a setting that sends little
	 * may not show the link again for a long time */
	bool slow = link_time(z) >= ZADAPT_WIDE_LINK_NS;
	if (slow == z->wide)
		return false;
	if (!slow) {
		z->wide = false;
		z->wide_backoff = z->wide_backoff * 2 > ZADAPT_MAX_HOLD ? ZADAPT_MAX_HOLD
									: z->wide_backoff * 2;
		z->wide_hold = z->wide_backoff;
	} else {
		if (z->wide_hold > 0) {
			z->wide_hold--;
			return false;
		}
		z->wide = true;
		z->rung = slow_link_rung(z);
	}
	forget_rungs(z);
	/* the next move waits for the new mode's own measurements */
	if (z->hold < ZADAPT_TRIAL)
		z->hold = ZADAPT_TRIAL;
	return true;
}

/* A move is judged on more than one window's noise, but a probe of store
 * in a window TCP's delivery rate timed, against which it loses to the
 * setting it left by the margin, is over at once: on a slow link its
 * next window would send another MiB whole to show the same, and at the
 * trial's end one sample of the link would not yet count (store's cost
 * is a guess until two do) and keep it a window longer. So is one in a
 * window where the receiver's window held the output back and TCP
 * delivered too slowly for storing to pay even so (held_ns, no link
 * sample): a receiver slower than the link (rsync's, sharing the CPU
 * with its sender) takes what store sends no faster, and the trial's
 * whole windows went out at 100 Mbit/s for nothing. A receiver that
 * stalls on loopback is delivered to at a few ms per MiB, at which store
 * still wins. (Not on a window that only blocked: on loopback that is
 * the receiver stalling, which the trial's second window is there to
 * see past.) */
static bool store_probe_lost(const struct zadapt *z, bool tcp_timed)
{
	if ((!tcp_timed && !z->held_ns) || !is_store(z, z->rung) || z->came_from < 0)
		return false;
	bool guess;
	struct zadapt_rung stored = estimate(z, z->rung, &guess);
	if (tcp_timed)
		return better(zadapt_cost(z, z->came_from), cost_of(z, &stored, false));
	struct zadapt_rung back = estimate(z, z->came_from, &guess);
	return better(cost_at(z, &back, z->held_ns), cost_at(z, &stored, z->held_ns));
}

/* The speed side: move to the setting that moves the most input per
 * second (see zadapt.h). */
static void judge_speed(struct zadapt *z, const struct zadapt_window *w)
{
	if (w->bytes == 0)
		return;
	bool tcp_timed = measure(z, w);
	if (judge_wide(z))
		return; /* a new frame: its own measurements first */
	int best = best_rung(z, false);
	if (z->probing && store_probe_lost(z, tcp_timed)) {
		z->probing = 0;
		take_back(z, z->came_from);
		return;
	}
	if (z->probing > 1) {
		z->probing--;
		return;
	}
	if (z->probing) {
		z->probing = 0;
		/* a move must prove itself: measured, it beats where it came
		 * from by the margin, or it is taken back (ties keep the
		 * setting that sends fewer bytes) */
		int back = z->came_from;
		if (best < 0 && back >= 0 && !better(zadapt_cost(z, z->rung), zadapt_cost(z, back)))
			best = back;
		if (best >= 0) { /* the last move did not pay: back, and wait */
			take_back(z, best);
			return;
		}
		if (z->backoff > 1)
			z->backoff /= 2;
	} else if (z->hold > 0) {
		z->hold--;
		return;
	}
	if (best < 0)
		best = best_rung(z, true);
	if (best >= 0)
		move_to(z, best);
}

void zadapt_assume_link(struct zadapt *z, uint64_t ns_per_mib)
{
	for (int i = 0; i < ZADAPT_LINK_SAMPLES; i++)
		z->link_samples[i] = ns_per_mib;
	z->nlink = 2;
	z->link_ns_per_mib = ns_per_mib;
	z->link_known = true;
}

void zadapt_link_floor(struct zadapt *z, uint64_t ns_per_mib)
{
	z->link_floor_ns = ns_per_mib;
	if (ns_per_mib && (!z->link_known || z->link_ns_per_mib < ns_per_mib))
		zadapt_assume_link(z, ns_per_mib);
}

bool zadapt_window_end(struct zadapt *z, const struct zadapt_window *w)
{
	if (!z->adaptive || z->nrungs < 2)
		return false;
	int before = zadapt_setting(z);
	z->left_known = w->left_known;
	z->left = w->left;
	judge_data(z, w);
	if (!z->incompressible && w->timed)
		judge_speed(z, w);
	if (zadapt_setting(z) == before)
		return false;
	z->changes++;
	return true;
}
