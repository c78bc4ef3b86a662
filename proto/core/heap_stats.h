/*
 * --info=stats3: the heap statistics block each role prints at its end
 * (rsync main.c: show_malloc_stats), from glibc's mallinfo2().
 */
#ifndef FERRY_HEAP_STATS_H
#define FERRY_HEAP_STATS_H

#include "proto/core/session.h"

/* Print "ferry[PID] (ROLE) heap statistics:" and the malloc counters of
 * this process as they are now, through session_info() (stdout on a
 * client, MSG_INFO from a server). role is rsync's who_am_i() word
 * ("sender", "receiver", "generator"); "server " is put before it on a
 * server. Does nothing below --info=stats3. Roles that share a process
 * (ferry's receiver and generator are threads) show the same heap. */
void heap_stats_report(struct session *s, const char *role);

#endif
