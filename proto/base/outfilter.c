/*
 * rsync's output escaping (log.c: filtered_fwrite after its iconv check):
 * a byte is written as \#ooo when it is a control character (tab
 * excepted), when it starts a literal "\#ddd" (so escapes stay
 * unambiguous), or, unless -8, when it is not part of a valid character
 * of the current locale.
 */
#include "proto/base/outfilter.h"

#include <ctype.h>
#include <string.h>
#include <wchar.h>

static bool is_escape_lookalike(const char *p)
{
	return p[0] == '\\' && p[1] == '#' && isdigit((unsigned char)p[2]) &&
	       isdigit((unsigned char)p[3]) && isdigit((unsigned char)p[4]);
}

void out_filtered(FILE *f, const char *s, bool allow_8bit, char end)
{
	size_t len = strlen(s);
	mbstate_t st;

	memset(&st, 0, sizeof st);
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x80) {
			/* Control characters only: rsync checks printability
			 * through its iconv pass, which leaves ASCII alone. */
			bool esc = is_escape_lookalike(s + i) || (c != '\t' && c < ' ');
			if (esc)
				fprintf(f, "\\#%03o", c);
			else
				fputc(c, f);
			i++;
			continue;
		}
		if (allow_8bit) {
			fputc(c, f);
			i++;
			continue;
		}
		wchar_t wc;
		size_t n = mbrtowc(&wc, s + i, len - i, &st);
		if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
			memset(&st, 0, sizeof st);
			fprintf(f, "\\#%03o", c);
			i++;
			continue;
		}
		fwrite(s + i, 1, n, f);
		i += n;
	}
	if (end)
		fputc(end, f);
}

size_t out_escape_log(char *dst, size_t size, const char *s, size_t len)
{
	size_t o = 0;

	if (size == 0)
		return 0;
	for (size_t i = 0; i < len && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		bool esc = (i + 4 < len && is_escape_lookalike(s + i)) ||
			   (c != '\t' && (c < ' ' || (c >= 0x80 && c <= 0x9f)));
		size_t need = esc ? 5 : 1;
		if (o + need >= size)
			break;
		if (esc)
			snprintf(dst + o, 6, "\\#%03o", c);
		else
			dst[o] = (char)c;
		o += need;
	}
	dst[o] = '\0';
	return o;
}
