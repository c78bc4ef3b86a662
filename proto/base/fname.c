/*
 * The one normaliser of slash-separated names (see fname.h).
 */
#include "proto/base/fname.h"

#include <stdbool.h>

static bool is_dot_dot(const char *f)
{
	return f[0] == '.' && f[1] == '.' && (f[2] == '/' || f[2] == '\0');
}

ssize_t clean_fname(char *name, unsigned flags)
{
	char *t = name;
	const char *f = name;

	if (*f == '/')
		*t++ = *f++;
	/* what a ".." or the trailing-slash rule may not take away */
	char *const start = t;
	while (*f) {
		if (*f == '/') { /* an empty component */
			f++;
			continue;
		}
		if (f[0] == '.' && f[1] == '/') {
			f += 2;
			continue;
		}
		if (f[0] == '.' && f[1] == '\0' &&
		    (flags & (CFN_DROP_TRAILING_DOT_DIR | CFN_COLLAPSE_DOT_DOT_DIRS)))
			break;
		if (is_dot_dot(f) && (flags & CFN_REFUSE_DOT_DOT_DIRS))
			return -1;
		if (is_dot_dot(f) && (flags & CFN_COLLAPSE_DOT_DOT_DIRS)) {
			/* t is just past "component/": back to its start */
			if (t > start) {
				t--;
				while (t > start && t[-1] != '/')
					t--;
			}
			f += 2;
			continue;
		}
		while (*f && (*t++ = *f++) != '/')
			;
	}
	if (!(flags & CFN_KEEP_TRAILING_SLASH) && t > start && t[-1] == '/')
		t--;
	if (t == name)
		*t++ = '.';
	*t = '\0';
	return t - name;
}
