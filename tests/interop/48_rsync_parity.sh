#!/bin/bash
# Local-mode parity with real rsync for less common option sets: each case
# builds one tree, copies it twice, runs rsync in one copy and ferry in the
# other with the same command line, and compares exit code, stdout, stderr
# (program name and version tags normalised) and the resulting trees.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

# What the two runs may differ in: the directory each ran in, the
# program's name, the version and line in an error's "at FILE(LINE)
# [ROLE=VERSION]" tail, byte counts, timings.
normalise() {
    sed -E -e "s#$2#W#g" -e "s#$FERRY#rsync#g" -e 's/\bferry\b/rsync/g' \
        -e 's/ at [a-z0-9_.]+\([0-9]+\) \[([A-Za-z]+)=[^]]*\]/ at X [\1]/' \
        -e '/^(sent|total size|Total bytes) /d' \
        -e 's/^(File list (generation|transfer) time:).*/\1 T/' "$1"
}

# A tree listing: name, type and mode, size, mtime, content hash, link
# target; a directory's mtime only if the source set it (older than 2021).
tree_list() {
    (cd "$1" && find . -printf '%p %y %m %s %TY %l\n' | sort) |
        sed -E 's/ (202[1-9]|20[3-9][0-9]) / NEW /'
    (cd "$1" && find . -type f -exec md5sum {} + | sort)
}

# parity NAME SETUP CMD -- SETUP (shell code) builds the tree in an empty
# directory; CMD is run there with $R set to rsync, then to ferry.
parity() {
    local name=$1 setup=$2 cmd=$3 d b
    d=$T/$name
    mkdir -p "$d/base" && (cd "$d/base" && eval "$setup") || return 1
    for b in rsync ferry; do
        cp -a "$d/base" "$d/$b"
        if [ $b = rsync ]; then R=$RSYNC; else R=$FERRY; fi
        (cd "$d/$b" && R=$R eval "$cmd") >"$d/$b.out" 2>"$d/$b.err"
        echo "exit $?" >>"$d/$b.out"
        normalise "$d/$b.out" "$d/$b" >"$d/$b.o"
        normalise "$d/$b.err" "$d/$b" >"$d/$b.e"
        tree_list "$d/$b" >"$d/$b.tree"
    done
    diff "$d/rsync.o" "$d/ferry.o" && diff "$d/rsync.e" "$d/ferry.e" &&
        diff "$d/rsync.tree" "$d/ferry.tree"
}

OLD="find . -exec touch -h -d '2020-01-01 00:00:00' {} +"

# --max-delete counts a directory after its contents, and a directory that
# keeps something because of the limit is reported as non-empty, as rsync's
# delete_item does: the limit stops deletions at the same entries.
for m in 0 1 2 3; do
    t_check "max_delete_nested_$m" parity "max_delete_$m" \
        "mkdir -p SRC DST/z/s1 DST/z/s2 && touch DST/z/s1/q DST/z/s2/q DST/z/r DST/y && $OLD" \
        "\$R -av --stats --max-delete=$m --delete SRC/ DST/"
done

# Without -D, devices and specials are still in the sender's list: the
# receiver says it skips them (--info=nonreg), --stats counts them, and
# --list-only shows them (rsync's make_file keeps every type).
if [ "$(id -u)" = 0 ]; then
    NODES="mknod SRC/cdev c 1 3 && mkfifo SRC/fifo"
else
    NODES="mkfifo SRC/fifo"
fi
for opts in "-r --stats" "-r --specials" "-r --info=nonreg0" "-rq"; do
    t_check "nonreg_${opts// /_}" parity "nonreg_${opts// /_}" \
        "mkdir -p SRC/d && echo a >SRC/a && $NODES && $OLD" \
        "\$R $opts SRC/ DST/"
done
t_check nonreg_list_only parity nonreg_list_only \
    "mkdir -p SRC/d && echo a >SRC/a && $NODES && $OLD" "\$R -r --list-only SRC/"

# The destination, as rsync's get_local_name() takes it: several files
# never overwrite one existing file, "F/" naming a file is an error, a
# missing parent is reported with the receiver's name and full path, and
# its closing line is the receiver's own; --mkpath counts what it made;
# a symlink to a directory is followed; an empty list still makes DST/.
DEST_TREE="mkdir -p SRC/d real && echo a >SRC/a && echo b >SRC/b && echo c >SRC/d/c &&
    echo f >F && ln -s real LD && $OLD"
i=0
for args in "SRC/a SRC/b F" "SRC/d F" "SRC/a F/" "SRC/ F/sub/" "SRC/ x/y/DST/" "SRC/a x/y/F" \
    "--mkpath SRC/a SRC/b x/y/F" "--mkpath SRC/ x/y/DST/" "--mkpath SRC/a x/y/F" \
    "--mkpath -n SRC/a x/F" "SRC/ LD" "SRC/a LD" "nonexist_ DST/" "nonexist_ x/DST/"; do
    i=$((i + 1))
    t_check "dest_$i" parity "dest_$i" "$DEST_TREE" "\$R -ai $args"
done

# The sender's own errors are rsync's rsyserr(): "[sender]" and the
# name made absolute; one during "building file list ... " starts a line.
i=0
for args in "-a nonexist_ SRC/ DST/" "-a e/nonexist_ DST/" "-a nonexist_/ DST/" \
    "-av --no-inc-recursive SRC/ nonexist_ DST/" "-a SRC/d/nonexist_/ DST/" \
    "-aL SRC/ DST/" "-aL SRC/d/gone DST/" "-aR SRC/./nonexist_ DST/" "-aR nope_/./x DST/"; do
    i=$((i + 1))
    t_check "sender_err_$i" parity "sender_err_$i" "mkdir e && $DEST_TREE && ln -s nowhere SRC/d/gone" \
        "\$R $args"
done

# -vv: rsync's level-1 debugging lines (the generator's "delta-transmission
# ...", the sender's "total: matches=...", each filter match as "[sender]
# hiding ..." or "[generator] protecting ...", a rule read from a file not
# quoted); without -r/-d no "building file list ... done".
VV_TREE="mkdir -p SRC/sub DST/q && echo a >SRC/a && echo b >SRC/b && touch SRC/x.o SRC/sub/y &&
    echo '- *.o' >SRC/.rsync-filter && echo 'sub/' >ex.txt && touch DST/q/k.o && $OLD"
i=0
for args in "-avv SRC/ DST/" "-avv -F --exclude-from=ex.txt --exclude=b SRC/ DST/" \
    "-avv --delete --exclude=*.o SRC/ DST/" "-avv -C SRC/ DST/" "-avv --no-i-r SRC/ DST/" \
    "-v SRC/a DST/" "-vv --filter=:-_.rsync-filter SRC/ DST/"; do
    i=$((i + 1))
    t_check "vv_$i" parity "vv_$i" "$VV_TREE" "\$R $args"
done

# A file found in a --link-dest/--copy-dest/--compare-dest dir that is not
# up to date is the basis the item is compared with: ">f..t......", not
# ">f+++++++++" (generator.c: try_dests_reg's best match).
ALT_TREE="mkdir -p SRC L1 L2 && echo a >SRC/a && echo bb >SRC/b && $OLD && cp SRC/b L1/b &&
    echo x >L1/a && chmod 600 L1/a && touch -d 2021-06-01 L1/a && echo zz >L2/b"
i=0
for args in "--link-dest=../L1" "--copy-dest=../L1" "--compare-dest=../L1" \
    "--link-dest=../L2 --link-dest=../L1 --stats"; do
    i=$((i + 1))
    t_check "alt_basis_$i" parity "alt_basis_$i" "$ALT_TREE" "\$R -ai $args SRC/ DST/"
done

# Usage errors: rsync's message and closing line, no help hint; a
# --max-alloc of 0 is unlimited, one below 1M says so.
i=0
for args in "--bogus SRC/ DST/" "-a --max-size=1.5X SRC/ DST/" "-a --max-alloc=0 SRC/ DST/" \
    "-a --max-alloc=1k SRC/ DST/"; do
    i=$((i + 1))
    t_check "usage_$i" parity "usage_$i" "mkdir SRC && echo a >SRC/a && $OLD" "\$R $args"
done

# --ignore-existing leaves whatever is at an entry's place, a symlink's or
# a device's too, and --info=skip2 says why it would have changed.
IE_TREE="mkdir -p SRC/d DST/d && echo a >SRC/a && echo b >SRC/d/b && echo m >SRC/d/m &&
    ln -s a SRC/la && ln -s ../nowhere SRC/d/gone && mkdir SRC/e && $OLD &&
    echo old >DST/a && cp -a SRC/d/m DST/d/m && cp SRC/d/b DST/d/b && chmod 600 DST/d/b &&
    touch -d 2020-01-01 DST/d/b && echo x >DST/la && ln -s ../nowhere DST/d/gone && echo f >DST/e"
i=0
for args in "-a --info=skip2" "-a --info=skip1" "-ac --info=skip2" "-ai" "-a --size-only --info=skip2"; do
    i=$((i + 1))
    t_check "ignore_existing_$i" parity "ignore_existing_$i" "$IE_TREE" \
        "\$R $args --ignore-existing SRC/ DST/"
done

# The generator's errors read as rsync's rsyserr(): "[generator]" and the
# name through the destination, made absolute.
t_check gen_err_1 parity gen_err_1 "mkdir -p SRC/d/e DST/d && echo c >SRC/d/e/c && echo f >DST/d/e && $OLD" \
    "\$R -a SRC/ DST/"

# --update compares whole seconds, as rsync does: a destination written
# later within the same second is not newer; one a second later is.
UP_TREE="mkdir SRC DST && echo a >SRC/same && echo b >DST/same && echo c >SRC/later && echo d >DST/later \
 && touch -d '2020-01-01 00:00:00.1' SRC/same SRC/later && touch -d '2020-01-01 00:00:00.9' DST/same \
 && touch -d '2020-01-01 00:00:01.0' DST/later"
t_check update_same_second parity update_same_second "$UP_TREE" \
    "\$R -aii --update --info=skip SRC/ DST/"

# A dry run's --stats count the files it would transfer, as rsync's.
t_check dry_stats parity dry_stats "mkdir -p SRC/d DST && echo a >SRC/a && echo b >SRC/d/b && $OLD" \
    "\$R -a --stats --dry-run SRC/ DST/"

# A pull whose file list comes back empty ends before the receiving side
# forks: its closing line is the "Receiver"'s (main.c: client_run). The
# read error some rsync versions add after it is not compared.
mkdir -p "$T/mod/d" && echo a >"$T/mod/d/a"
if t_rsyncd_start rd48 "[m]
    path = $T/mod"; then
    closing_of() {
        "$1" -a "rsync://127.0.0.1:$RSYNCD_PORT/m/$2" "$T/pull_$3/" 2>&1 >/dev/null |
            sed -nE 's/^(rsync|ferry) (error|warning): (.*) at [^ ]+ \[([A-Za-z]+)=.*$/\2: \3 [\4]/p'
    }
    pull_closing() {
        local r f
        r=$(closing_of "$RSYNC" "$1" r) f=$(closing_of "$FERRY" "$1" f)
        echo "rsync: $r / ferry: $f"
        [ -n "$r" ] && [ "$r" = "$f" ]
    }
    t_check pull_empty_list pull_closing nonexist
    t_check pull_empty_list_dir pull_closing d/nonexist/
else
    t_fail rsyncd_start "rsync daemon did not start"
fi

# A --files-from name that is missing, named as rsync does.
t_check files_from_missing parity files_from_missing \
    "mkdir -p SRC/d && echo a >SRC/a && printf 'a\\nnonexist_\\nd/zz/q\\n' >list && $OLD" \
    "\$R -ai --files-from=list SRC/ DST/"

# --info=progress2: nothing before the first data, a line at each file's
# end with its (xfr#, to-chk) tail, and a dry run's transfers counted in
# the total. Rates are timing: only their place is compared.
PROG_TREE="mkdir SRC && head -c 5000 /dev/zero >SRC/a && head -c 300000 /dev/zero >SRC/b && $OLD"
PROG_NORM="tr '\\r' '\\n' | sed -E 's/ *[0-9.]+[kMG]B\\/s/ RATE/; s/[0-9]+:[0-9]{2}:[0-9]{2}/TIME/'"
t_check progress2_dry_run parity progress2_dry_run "$PROG_TREE" \
    "\$R -a --info=progress2 -n SRC/ DST/ | $PROG_NORM"
t_check progress2_lines parity progress2_lines "$PROG_TREE" \
    "\$R -a --info=progress2 SRC/ DST/ | $PROG_NORM | sed -n '1,3p'"

t_done
