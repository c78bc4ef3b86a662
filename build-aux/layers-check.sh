#!/bin/sh
# The layer check (`make layers-check`, run by `make check`): fails when a
# source file includes a header from a layer above its own. docs/ARCHITECTURE.md
# ("The layers inside proto/") says what each layer holds.
#
# The order, lowest first. A file may include headers of its own layer
# and of the layers below it. client/ and daemon/ share the top layer:
# they use each other (main.c dispatches to both) and everything in proto/.
LAYERS="proto/base proto/core proto/filter proto/meta proto/flist proto/delta proto/send proto/recv proto/run proto/args client|daemon"

cd "$(dirname "$0")/.." || exit 2

# The rank (0 = lowest) of the layer a path lies in; empty if none.
rank_of() {
	r=0
	for layer in $LAYERS; do
		for dir in $(echo "$layer" | tr '|' ' '); do
			case "$1" in "$dir"/*) echo "$r"; return ;; esac
		done
		r=$((r + 1))
	done
}

bad=0
files=0
for f in proto/*/*.[ch] client/*.[ch] daemon/*.[ch]; do
	[ -f "$f" ] || continue
	files=$((files + 1))
	own=$(rank_of "$f")
	if [ -z "$own" ]; then
		echo "layers-check: $f: not in any layer (add its folder to LAYERS in $0)" >&2
		bad=1
		continue
	fi
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		case "$inc" in */*) ;; *) continue ;; esac # a header beside the file
		if [ ! -f "$inc" ]; then
			echo "layers-check: $f: includes \"$inc\", which does not exist" >&2
			bad=1
			continue
		fi
		theirs=$(rank_of "$inc")
		if [ -z "$theirs" ] || [ "$theirs" -gt "$own" ]; then
			echo "layers-check: $f includes $inc, from a layer above its own" >&2
			bad=1
		fi
	done
done
[ "$bad" = 0 ] && echo "layers-check: $files files, every include at or below its own layer"
exit "$bad"
