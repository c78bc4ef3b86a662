/*
 * --help, --daemon --help, --version and --info/--debug=help output, in
 * rsync's layouts (usage.c: usage, daemon_usage, print_rsync_version;
 * options.c: output_item_help). The option lists come from options_table[],
 * so they only ever list what the parser accepts.
 */
#include <errno.h> /* program_invocation_short_name */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "client/usage.h"
#include "proto/args/options.h"
#include "proto/base/checksum.h"
#include "proto/base/json.h"
#include "proto/delta/token.h"

#define HELP_COL 24

/* "--name=ARG, -x" / "--name" / "-x" for a row. */
static void opt_names(const struct opt_spec *sp, char *buf, size_t sz)
{
	char shortname[8] = "";

	if (sp->shortopt)
		snprintf(shortname, sizeof shortname, "%s-%c", sp->name ? ", " : "", sp->shortopt);
	if (sp->name)
		snprintf(buf, sz, "--%s%s%s%s", sp->name, sp->argname ? "=" : "",
			 sp->argname ? sp->argname : "", shortname);
	else
		snprintf(buf, sz, "%s", shortname);
}

/* Left column of a --help line: the names, or the row's override. */
static void left_column(const struct opt_spec *sp, char *buf, size_t sz)
{
	if (sp->display)
		snprintf(buf, sz, "%s", sp->display);
	else
		opt_names(sp, buf, sz);
}

/* Print "left  help", continuation lines of help indented to the column. */
static void help_line(FILE *f, const char *left, const char *help)
{
	const char *nl;

	fprintf(f, "%-*s %.*s\n", HELP_COL, left,
		(int)((nl = strchr(help, '\n')) ? (size_t)(nl - help) : strlen(help)), help);
	while (nl) {
		const char *start = nl + 1;
		nl = strchr(start, '\n');
		fprintf(f, "%-*s %.*s\n", HELP_COL, "",
			(int)(nl ? (size_t)(nl - start) : strlen(start)), start);
	}
}

/* Words separated by ", ", wrapped at 76 columns with a 4-space indent. */
struct wrap {
	FILE *f;
	int col;
};

static void wrap_word(struct wrap *w, const char *word)
{
	int len = (int)strlen(word);

	if (w->col && w->col + 2 + len > 76) {
		fprintf(w->f, ",\n");
		w->col = 0;
	} else if (w->col) {
		fprintf(w->f, ", ");
		w->col += 2;
	}
	if (!w->col) {
		fprintf(w->f, "    ");
		w->col = 4;
	}
	fprintf(w->f, "%s", word);
	w->col += len;
}

/* The unsupported rows that --help would show for the given mode. */
static void print_unsupported(FILE *f, unsigned mode)
{
	struct wrap w = { f, 0 };
	int i;

	for (i = 0; i < options_table_len; i++) {
		const struct opt_spec *sp = &options_table[i];
		char name[64];
		if (sp->supported || !(sp->modes & mode))
			continue;
		if (!(mode == OM_DAEMON ? sp->dhelp : sp->help))
			continue;
		if (sp->name)
			snprintf(name, sizeof name, "--%s", sp->name);
		else
			snprintf(name, sizeof name, "-%c", sp->shortopt);
		if (!w.col)
			fprintf(f, "\nRecognised but not supported yet:\n");
		wrap_word(&w, name);
	}
	if (w.col)
		fprintf(f, "\n");
}

/* One "Capabilities:"-style item list, wrapped as rsync's
 * usage.c:print_info_flags() does (75-byte lines, 3-space indent). */
static void print_flags(FILE *f, const char *const *items)
{
	char line[75], item[40];
	int len = 0, j;

	for (j = 0;; j++) {
		const char *s = items[j], *next = s ? items[j + 1] : NULL;
		int need_comma = next && *next != '*';
		int ilen;

		if (!s || *s == '*')
			ilen = 1000;
		else
			ilen = snprintf(item, sizeof item, " %s%s", s, need_comma ? "," : "");
		if (len && len + ilen >= (int)sizeof line) {
			fprintf(f, "   %s\n", line);
			len = 0;
		}
		if (!s)
			break;
		if (*s == '*')
			fprintf(f, "%s:\n", s + 1);
		else {
			snprintf(line + len, sizeof line - (size_t)len, "%s", item);
			len += ilen;
		}
	}
}

/* The capability and optimisation items, rsync usage.c:info_flags[]
 * order, each true to what ferry does: "no X" where the option is refused
 * or the engine lacks it. bufs holds the "%d-bit" items. */
struct version_items {
	char files[24], inums[24], stamps[24], longs[24];
	const char *items[40];
};

static void version_items_init(struct version_items *v)
{
	struct stat st;
	int n = 0;

	snprintf(v->files, sizeof v->files, "%d-bit files", (int)(sizeof(off_t) * 8));
	snprintf(v->inums, sizeof v->inums, "%d-bit inums", (int)(sizeof st.st_ino * 8));
	snprintf(v->stamps, sizeof v->stamps, "%d-bit timestamps", (int)(sizeof(time_t) * 8));
	snprintf(v->longs, sizeof v->longs, "%d-bit long ints", (int)(sizeof(int64_t) * 8));
	const char *const fixed[] = {
		"*Capabilities",
		v->files, v->inums, v->stamps, v->longs,
		"socketpairs", "symlinks", "symtimes", "hardlinks",
		/* -H links every non-directory, but linked symlinks and
		 * specials are not tested against rsync yet. */
		"no hardlink-specials", "no hardlink-symlinks", "IPv6",
		"atimes", "batchfiles", "inplace", "append", "ACLs",
		"xattrs", "optional secluded-args", "no iconv", "prealloc",
		"stop-at", "no crtimes",
		"*Optimizations",
		"no SIMD-roll", "no asm-roll", "no openssl-crypto", "no asm-MD5",
		NULL,
	};
	for (; fixed[n]; n++)
		v->items[n] = fixed[n];
	v->items[n] = NULL;
}

/* One item as rsync's JSON writes it: "X" is true, "no X" false,
 * "N-bit X" the number under "X_bits" (the plural 's' dropped), any
 * other "WORD X" the string WORD; '-' and ' ' in names become '_'.
 * Written into out (its length returned, -1 if it did not fit) so the
 * caller can wrap the line as rsync does. */
static int json_item(const char *str, bool comma, char *out, size_t size)
{
	const char *space = strchr(str, ' ');
	bool is_no = space && strncmp(str, "no ", 3) == 0;
	bool is_bits = space && str[0] >= '0' && str[0] <= '9';
	char name[40];

	if (is_bits)
		snprintf(name, sizeof name, "%.*s_bits", (int)strlen(space + 1) - 1, space + 1);
	else
		snprintf(name, sizeof name, "%s", space ? space + 1 : str);
	for (char *c = name; *c; c++)
		if (*c == ' ' || *c == '-')
			*c = '_';
	FILE *m = fmemopen(out, size, "w");
	if (!m)
		return -1;
	fputc(' ', m);
	json_write_string(m, name, strlen(name));
	fputs(": ", m);
	if (is_bits)
		fprintf(m, "%.*s", (int)(strchr(str, '-') - str), str);
	else if (!space)
		fputs("true", m);
	else if (is_no)
		fputs("false", m);
	else
		json_write_string(m, str, (size_t)(space - str));
	if (comma)
		fputc(',', m);
	long len = ftell(m);
	bool ok = fflush(m) == 0 && len >= 0 && (size_t)len < size;
	fclose(m);
	return ok ? (int)len : -1;
}

/* The items as rsync's print_info_flags(f == FNONE) does: one JSON
 * object per "*Heading" (lower-cased first letter), items wrapped at 75
 * columns with a 3-space indent. */
static void print_flags_json(FILE *f, const char *const *items)
{
	char line[75], item[48];
	int len = 0, open_obj = 0;

	for (int j = 0;; j++) {
		const char *s = items[j], *next = s ? items[j + 1] : NULL;
		int ilen = 1000;

		if (s && *s != '*' &&
		    (ilen = json_item(s, next && *next != '*', item, sizeof item)) < 0)
			continue; /* longer than any item of the table */
		if (len && len + ilen >= (int)sizeof line) {
			fprintf(f, "   %s\n", line);
			len = 0;
		}
		if (!s)
			break;
		if (*s == '*') {
			char heading[32];
			snprintf(heading, sizeof heading, "%c%s",
				 s[1] >= 'A' && s[1] <= 'Z' ? s[1] + 32 : s[1], s + 2);
			if (open_obj)
				fprintf(f, "  }");
			open_obj = 1;
			fputs(",\n  ", f);
			json_write_string(f, heading, strlen(heading));
			fputs(": {\n", f);
		} else {
			snprintf(line + len, sizeof line - (size_t)len, "%s", item);
			len += ilen;
		}
	}
	if (open_obj)
		fprintf(f, "  }");
}

/* ",\n  "name": [\n    "a", "b"\n  ]" for a space-separated list. */
static void print_list_json(FILE *f, const char *name, const char *list)
{
	char copy[256];
	char *save = NULL, *tok, *next;

	snprintf(copy, sizeof copy, "%s", list);
	fputs(",\n  ", f);
	json_write_string(f, name, strlen(name));
	fputs(": [\n   ", f);
	for (tok = strtok_r(copy, " ", &save); tok; tok = next) {
		next = strtok_r(NULL, " ", &save);
		fputc(' ', f);
		json_write_string(f, tok, strlen(tok));
		if (next)
			fputc(',', f);
	}
	fprintf(f, "\n  ]");
}

/* SEP "key": "value", rsync's -VV layout. */
static void print_field_json(FILE *f, const char *sep, const char *key, const char *value)
{
	fputs(sep, f);
	json_write_string(f, key, strlen(key));
	fputs(": ", f);
	json_write_string(f, value, strlen(value));
}

void usage_print_version_json(FILE *f)
{
	struct version_items v;
	char proto[16];

	version_items_init(&v);
	snprintf(proto, sizeof proto, "%d.0", FERRY_PROTOCOL_VERSION);
	print_field_json(f, "{\n  ", "program", "ferry");
	print_field_json(f, ",\n  ", "version", FERRY_VERSION);
	print_field_json(f, ",\n  ", "protocol", proto);
	print_field_json(f, ",\n  ", "copyright", "(C) 2026 by the ferry authors.");
	print_flags_json(f, v.items);
	print_list_json(f, "checksum_list", csum_default_list(true));
	print_list_json(f, "compress_list", TOKEN_SERVER_LIST);
	print_list_json(f, "daemon_auth_list", auth_default_list());
	print_field_json(f, ",\n  ", "license", "ISC");
	print_field_json(f, ",\n  ", "caveat", "ferry comes with ABSOLUTELY NO WARRANTY");
	fputs("\n}\n", f);
}

void usage_print_version(FILE *f)
{
	struct version_items v;
	char csums[128];
	const char *list = csum_default_list(true), *x64;

	version_items_init(&v);
	fprintf(f, "ferry  version %s  protocol version %d\n", FERRY_VERSION,
		FERRY_PROTOCOL_VERSION);
	fprintf(f, "Copyright (C) 2026 by the ferry authors.\n");
	print_flags(f, v.items);

	/* rsync lists aliases in parentheses: "xxh64 (xxhash)". */
	x64 = strstr(list, "xxh64");
	if (x64 && (x64[5] == ' ' || !x64[5]))
		snprintf(csums, sizeof csums, "%.*s (xxhash)%s", (int)(x64 + 5 - list), list,
			 x64 + 5);
	else
		snprintf(csums, sizeof csums, "%s", list);
	fprintf(f, "Checksum list:\n    %s\n", csums);
	fprintf(f, "Compress list:\n    %s\n", TOKEN_SERVER_LIST);
	fprintf(f, "Daemon auth list:\n    %s\n", auth_default_list());
	fprintf(f, "\n");
	fprintf(f, "ferry comes with ABSOLUTELY NO WARRANTY.  This is free software, and you\n");
	fprintf(f, "are welcome to redistribute it under the terms of the ISC licence.\n");
}

void usage_print_help(FILE *f)
{
	int i;

	usage_print_version(f);
	fprintf(f, "\n");
	fprintf(f, "ferry is a file transfer program capable of efficient remote update\n");
	fprintf(f, "via a fast differencing algorithm; it speaks the rsync protocol.\n");
	fprintf(f, "\n");
	fprintf(f, "Usage: ferry [OPTION]... SRC [SRC]... DEST\n");
	fprintf(f, "  or   ferry [OPTION]... SRC [SRC]... [USER@]HOST:DEST\n");
	fprintf(f, "  or   ferry [OPTION]... SRC [SRC]... [USER@]HOST::DEST\n");
	fprintf(f, "  or   ferry [OPTION]... SRC [SRC]... rsync://[USER@]HOST[:PORT]/DEST\n");
	fprintf(f, "  or   ferry [OPTION]... [USER@]HOST:SRC [DEST]\n");
	fprintf(f, "  or   ferry [OPTION]... [USER@]HOST::SRC [DEST]\n");
	fprintf(f, "  or   ferry [OPTION]... rsync://[USER@]HOST[:PORT]/SRC [DEST]\n");
	fprintf(f, "The ':' usages connect via remote shell, while '::' & 'rsync://' usages connect\n");
	fprintf(f, "to an rsync daemon, and require SRC or DEST to start with a module name.\n");
	fprintf(f, "\n");
	fprintf(f, "Options\n");
	for (i = 0; i < options_table_len; i++) {
		const struct opt_spec *sp = &options_table[i];
		char left[64];
		if (!sp->supported || !sp->help || !(sp->modes & OM_CLIENT))
			continue;
		left_column(sp, left, sizeof left);
		help_line(f, left, sp->help);
	}
	print_unsupported(f, OM_CLIENT);
	fprintf(f, "\n");
	fprintf(f, "Use \"ferry --daemon --help\" to see the daemon-mode command-line options.\n");
	fprintf(f, "Please see the ferry(1) and ferryd.conf(5) manpages for full documentation.\n");
}

void usage_print_daemon_help(FILE *f)
{
	/* The order of rsync's daemon help. */
	static const char *const order[] = {
		"daemon", "address", "bwlimit", "config", "check-config", "dparam", "no-detach",
		"port", "log-file", "log-file-format", "sockopts", "verbose",
		"ipv4", "ipv6", "help", NULL,
	};
	int i, k;

	usage_print_version(f);
	fprintf(f, "\n");
	/* the name it was started by: "rsync" when installed in rsync's place */
	fprintf(f, "Usage: %s --daemon [OPTION]...\n", program_invocation_short_name);
	for (k = 0; order[k]; k++) {
		for (i = 0; i < options_table_len; i++) {
			const struct opt_spec *sp = &options_table[i];
			char left[64];
			if (!sp->name || strcmp(sp->name, order[k]) || !(sp->modes & OM_DAEMON)
			    || !sp->dhelp || !sp->supported)
				continue;
			opt_names(sp, left, sizeof left);
			help_line(f, left, sp->dhelp);
			break;
		}
	}
	print_unsupported(f, OM_DAEMON);
	fprintf(f, "\n");
	fprintf(f, "If you were not trying to invoke ferry as a daemon, avoid using any of the\n");
	fprintf(f, "daemon-specific ferry options.  See also the ferryd.conf(5) manpage.\n");
}

void usage_print_output_words(FILE *f, bool debug)
{
	static const char *const info_levels[] = {
		"0) NONREG",
		"1) COPY,DEL,FLIST,MISC,NAME,STATS,SYMSAFE",
		"2) BACKUP,MISC2,MOUNT,NAME2,REMOVE,SKIP",
		NULL,
	};
	static const char *const debug_levels[] = {
		"2) BIND,CONNECT,CMD,DEL,DELTASUM,DUP,FILTER,FLIST,ICONV",
		"3) ACL,BACKUP,CONNECT2,DEL2,DELTASUM2,EXIT,FILTER2,FLIST2,FUZZY,GENR,OWN,RECV,SEND,TIME",
		"4) CMD2,DEL3,DELTASUM3,EXIT2,FLIST3,ICONV2,OWN2,PROTO,TIME2",
		"5) CHDIR,DELTASUM4,FLIST4,FUZZY2,HASH,HLINK",
		NULL,
	};
	const struct output_word *w = debug ? options_debug_words : options_info_words;
	const char *const *lv = debug ? debug_levels : info_levels;
	const char *opt = debug ? "--debug" : "--info";
	char buf[128];
	int j;

	fprintf(f, "Use OPT or OPT1 for level 1 output, OPT2 for level 2, etc.; OPT0 silences.\n");
	fprintf(f, "\n");
	for (j = 0; w[j].name; j++)
		fprintf(f, "%-10s %s\n", w[j].name, w[j].help);
	fprintf(f, "\n");
	snprintf(buf, sizeof buf, "Set all %s options (e.g. all4)", opt);
	fprintf(f, "%-10s %s\n", "ALL", buf);
	snprintf(buf, sizeof buf, "Silence all %s options (same as all0)", opt);
	fprintf(f, "%-10s %s\n", "NONE", buf);
	fprintf(f, "%-10s %s\n", "HELP", "Output this help message");
	fprintf(f, "\n");
	fprintf(f, "Options added at each level of verbosity:\n");
	for (j = 0; lv[j]; j++)
		fprintf(f, "%s\n", lv[j]);
}

void usage_print_request(const struct ferry_opts *o)
{
	FILE *f = o->msgs2stderr ? stderr : stdout;

	switch (o->print_request) {
	case OPTS_PRINT_NONE: break;
	case OPTS_PRINT_HELP: usage_print_help(f); break;
	case OPTS_PRINT_DAEMON_HELP: usage_print_daemon_help(stdout); break;
	case OPTS_PRINT_VERSION: usage_print_version(f); break;
	case OPTS_PRINT_VERSION_JSON: usage_print_version_json(f); break;
	case OPTS_PRINT_INFO_WORDS: usage_print_output_words(f, false); break;
	case OPTS_PRINT_DEBUG_WORDS: usage_print_output_words(f, true); break;
	}
}
