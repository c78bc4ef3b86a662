/*
 * --info=stats3 heap statistics (rsync main.c: show_malloc_stats).
 */
#include "proto/core/heap_stats.h"

#include <malloc.h>
#include <unistd.h>

static void line(struct session *s, const char *title, size_t num, const char *what)
{
	char label[16];

	snprintf(label, sizeof label, "%s:", title);
	session_info(s, "  %-11s%10zu   (%s)\n", label, num, what);
}

void heap_stats_report(struct session *s, const char *role)
{
	if (!info_ge(s->opts, INFO_STATS, 3))
		return;
	struct mallinfo2 mi = mallinfo2();

	session_info(s, "\n");
	session_info(s, "ferry[%d] (%s%s) heap statistics:\n", (int)getpid(),
		     s->am_server ? "server " : "", role);
	line(s, "arena", mi.arena, "bytes from sbrk");
	line(s, "ordblks", mi.ordblks, "chunks not in use");
	line(s, "smblks", mi.smblks, "free fastbin blocks");
	line(s, "hblks", mi.hblks, "chunks from mmap");
	line(s, "hblkhd", mi.hblkhd, "bytes from mmap");
	line(s, "allmem", mi.arena + mi.hblkhd, "bytes from sbrk + mmap");
	line(s, "usmblks", mi.usmblks, "always 0");
	line(s, "fsmblks", mi.fsmblks, "bytes in freed fastbin blocks");
	line(s, "uordblks", mi.uordblks, "bytes used");
	line(s, "fordblks", mi.fordblks, "bytes free");
	line(s, "keepcost", mi.keepcost, "bytes in releasable chunk");
}
