/*
 * --stop-at's time syntax (rsync options.c: parse_time): "y-m-dTh:m" with
 * leading fields optional ("m-dTh:m", "dTh:m", "Th:m", "h:m", ":m"); a
 * date without a time means its midnight. Fields left out are taken from
 * now and rolled forward (a day, a month, a year, or an hour for ":m") to
 * the first matching time in the future.
 */
#include <ctype.h>
#include <stdbool.h>
#include <time.h>

#include "proto/args/options.h"

struct when {
	int year, mon, mday, hour, min;
};

/* The numbers of arg into w; -1 fields were not given. */
static bool parse_fields(const char *p, struct when *w)
{
	int mode = 1; /* 1: in the date, 0: in the time, -1: a time must follow */

	*w = (struct when){-1, -1, -1, -1, -1};
	if (*p == 'T' || *p == 't' || *p == ':') {
		mode = *p == ':' ? 0 : -1;
		p++;
	}
	for (;; p++) {
		if (!isdigit((unsigned char)*p))
			return false;
		int n = 0;
		while (isdigit((unsigned char)*p)) {
			if (n > 100000)
				return false;
			n = n * 10 + (*p++ - '0');
		}
		if (*p == ':')
			mode = 0;
		if (mode > 0) {
			if (w->year != -1)
				return false;
			w->year = w->mon;
			w->mon = w->mday;
			w->mday = n;
			if (!*p)
				return true;
			if (*p == 'T' || *p == 't') {
				if (!p[1])
					return true;
				mode = -1;
			} else if (*p != '-' && *p != '/') {
				return false;
			}
			continue;
		}
		if (w->hour != -1)
			return false;
		w->hour = w->min;
		w->min = n;
		if (!*p)
			return mode >= 0;
		if (*p != ':')
			return false;
		mode = 0;
	}
}

time_t stop_at_parse(const char *arg, time_t now)
{
	struct tm today, t;
	struct when w;
	int roll = 0; /* which field rolls forward: 1 year, 2 month, 3 day */
	time_t hourly = 0, val;

	if (!parse_fields(arg, &w))
		return (time_t)-1;
	localtime_r(&now, &today);
	t = (struct tm){.tm_isdst = -1};
	if (w.year < 0) {
		t.tm_year = today.tm_year;
		roll = 1;
	} else if (w.year < 100) {
		t.tm_year = w.year;
		while (t.tm_year < today.tm_year)
			t.tm_year += 100;
	} else {
		t.tm_year = w.year - 1900;
	}
	if (w.mon < 0) {
		t.tm_mon = today.tm_mon;
		roll = 2;
	} else {
		t.tm_mon = w.mon - 1;
	}
	if (w.mday < 0) {
		t.tm_mday = today.tm_mday;
		roll = 3;
	} else {
		t.tm_mday = w.mday;
	}
	if (w.min < 0) {
		t.tm_hour = t.tm_min = 0;
	} else if (w.hour < 0) {
		if (roll != 3)
			return (time_t)-1; /* ":m" only makes sense for today */
		roll = 0;
		t.tm_hour = today.tm_hour;
		t.tm_min = w.min;
		hourly = 60 * 60;
	} else {
		t.tm_hour = w.hour;
		t.tm_min = w.min;
	}
	int want_mday = t.tm_mday;
	if (t.tm_hour > 23 || t.tm_min > 59 || t.tm_mon < 0 || t.tm_mon >= 12 || t.tm_mday < 1 ||
	    t.tm_mday > 31 || (val = mktime(&t)) == (time_t)-1)
		return (time_t)-1;
	/* mktime turns a too-large day into the next month: undo that too */
	while (roll && (val <= now || t.tm_mday < want_mday)) {
		if (roll == 3) {
			want_mday = ++t.tm_mday;
		} else if (roll == 2) {
			if (t.tm_mday < want_mday) {
				t.tm_mday = want_mday;
			} else if (++t.tm_mon == 12) {
				t.tm_mon = 0;
				t.tm_year++;
			}
		} else {
			if (t.tm_mday < want_mday) {
				if (t.tm_mon != 2 || want_mday != 29)
					return (time_t)-1;
				t.tm_mon = 1;
				t.tm_mday = 29;
			}
			t.tm_year++;
		}
		t.tm_isdst = -1;
		if ((val = mktime(&t)) == (time_t)-1) {
			if (roll != 3 || t.tm_mday <= 28)
				return (time_t)-1;
			t.tm_mday = want_mday = 1;
			roll = 2;
		}
	}
	while (hourly && val <= now)
		val += hourly;
	return val;
}
