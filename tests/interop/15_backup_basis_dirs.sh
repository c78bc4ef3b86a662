#!/bin/bash
# -b/--backup-dir/--suffix, --compare-dest/--copy-dest/--link-dest,
# --max-size/--min-size and --mkpath: each run by real rsync and by ferry on
# identical inputs, locally and against daemons, with identical results.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC/d"
for i in 1 2 3; do head -c $((i * 20000)) /dev/urandom >"$SRC/f$i"; done
head -c 5000 /dev/urandom >"$SRC/d/inner"
echo small >"$SRC/tiny"
touch -d @1600000000 "$SRC"/f* "$SRC/d/inner" "$SRC/tiny"

# A previous copy: f1 unchanged, f2 changed, f3 and tiny missing, d/inner
# unchanged. Made once and copied, so every run starts from the same bytes.
PREV=$T/prev.template
mkdir -p "$PREV/d"
cp -p "$SRC/f1" "$PREV/f1"
cp -p "$SRC/d/inner" "$PREV/d/inner"
head -c 40000 /dev/urandom >"$PREV/f2"
echo stale >"$PREV/gone"
touch -d @1500000000 "$PREV/f2" "$PREV/gone" "$PREV/d" "$PREV"
mkprev() { # DIR
    cp -a "$PREV" "$1"
}

# Run the same local command with rsync and with ferry; DST is replaced.
both() { # TAG PREP-FUNCTION SUBDIR ARGS... (DST stands for the destination)
    local tag=$1 prep=$2 sub=$3 tool
    shift 3
    for tool in rsync ferry; do
        local d="$T/$tag.$tool"
        rm -rf "$d" "$T/$tag.$tool.bak"
        mkdir -p "$d"
        $prep "$d" "$T/$tag.$tool.bak"
        local args=("${@//DST/$d}")
        args=("${args[@]//BAK/$T/$tag.$tool.bak}")
        local bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        "$bin" "${args[@]}" >"$d.out" 2>&1 || { echo "$tool failed:"; cat "$d.out"; return 1; }
    done
    # Directory times are left out: with backups, rsync's own result
    # depends on when its renames land relative to its directory touch-ups.
    t_compare --no-dir-times "$T/$tag.rsync/$sub" "$T/$tag.ferry/$sub" || return 1
    if [ -d "$T/$tag.rsync.bak" ] || [ -d "$T/$tag.ferry.bak" ]; then
        t_compare --no-dir-times "$T/$tag.rsync.bak" "$T/$tag.ferry.bak" || return 1
    fi
}

prep_dest() { mkprev "$1/dst"; }
prep_none() { :; }
prep_prev() { mkprev "$1/prev"; }

check_backup_suffix() {
    both backup prep_dest dst -a -b --delete "$SRC/" DST/dst/ || return 1
    [ -f "$T/backup.ferry/dst/f2~" ] && [ -f "$T/backup.ferry/dst/gone~" ]
}
t_check backup_suffix_keeps_replaced_and_deleted check_backup_suffix

check_backup_again() {
    # a second run must not delete the backups (rsync protects *~)
    "$FERRY" -a -b --delete "$SRC/" "$T/backup.ferry/dst/" || return 1
    [ -f "$T/backup.ferry/dst/f2~" ] && [ -f "$T/backup.ferry/dst/gone~" ]
}
t_check backup_files_survive_delete check_backup_again

check_backup_dir() {
    both backupdir prep_dest dst -a --delete --backup-dir=BAK --suffix=.old "$SRC/" DST/dst/ || return 1
    [ -f "$T/backupdir.ferry.bak/f2.old" ] && [ -f "$T/backupdir.ferry.bak/gone.old" ]
}
t_check backup_dir_and_suffix check_backup_dir

check_backup_dir_relative() {
    # relative --backup-dir is relative to the destination
    both backuprel prep_dest dst -a --delete -b --backup-dir=../bk "$SRC/" DST/dst/ || return 1
    [ -f "$T/backuprel.ferry/bk/f2" ] && [ -f "$T/backuprel.ferry/bk/gone" ] &&
        t_compare --no-dir-times "$T/backuprel.rsync/bk" "$T/backuprel.ferry/bk"
}
t_check backup_dir_relative_to_destination check_backup_dir_relative

for mode in compare-dest copy-dest link-dest; do
    check_alt() {
        both "$mode" prep_prev new -a --$mode=../prev "$SRC/" DST/new/ || return 1
        local d="$T/$mode.ferry"
        case $mode in
        compare-dest) [ ! -e "$d/new/f1" ] && [ -f "$d/new/f2" ] ;;
        copy-dest) [ -f "$d/new/f1" ] && [ "$(stat -c %i "$d/new/f1")" != "$(stat -c %i "$d/prev/f1")" ] ;;
        link-dest) [ "$(stat -c %i "$d/new/f1")" = "$(stat -c %i "$d/prev/f1")" ] &&
            [ "$(stat -c %i "$d/new/d/inner")" = "$(stat -c %i "$d/prev/d/inner")" ] ;;
        esac
    }
    t_check "${mode//-/_}_local" check_alt
done

check_sizes() {
    both sizes prep_none . -a --max-size=30k --min-size=10 "$SRC/" DST/ || return 1
    [ -f "$T/sizes.ferry/f1" ] && [ ! -e "$T/sizes.ferry/f2" ] && [ ! -e "$T/sizes.ferry/tiny" ]
}
t_check max_size_min_size check_sizes

check_mkpath() {
    both mkpath prep_none a -a --mkpath "$SRC/" DST/a/b/c/ || return 1
    both mkpathfile prep_none x -t --mkpath "$SRC/f1" DST/x/y/renamed || return 1
    [ -f "$T/mkpathfile.ferry/x/y/renamed" ]
}
t_check mkpath_creates_parents check_mkpath

check_temp_dir() {
    mkdir -p "$T/tmpd"
    both tempdir prep_none . -a --temp-dir="$T/tmpd" "$SRC/" DST/ || return 1
    [ -z "$(ls -A "$T/tmpd")" ] || return 1
    # on another file system (tmpfs) the file is copied into place
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then
        local shm
        shm=$(mktemp -d /dev/shm/ferry-test.XXXXXX) || return 1
        "$FERRY" -a -T "$shm" "$SRC/" "$T/tempdir.shm/" || { rm -rf "$shm"; return 1; }
        rmdir "$shm" || return 1
        t_compare "$SRC" "$T/tempdir.shm" || return 1
    fi
    ! "$FERRY" -a -T "$T/nonexistent" "$SRC/" "$T/tempdir.none/" 2>"$T/tempdir.err"
    [ $? = 0 ] && grep -q "The temp-dir does not exist" "$T/tempdir.err"
}
t_check temp_dir_local_and_cross_device check_temp_dir

# Against daemons: ferry pushes to rsyncd with --link-dest (the option is
# forwarded), rsync pushes to the ferry daemon with --link-dest=../prev
# (resolved inside the module).
MOD=$T/mod
mkdir -p "$MOD"
mkprev "$MOD/prev"
mkdir -p "$T/mod_r"
mkprev "$T/mod_r/prev"
t_rsyncd_start bd_rsyncd "[m]
    path = $T/mod_r
    read only = no" || { t_fail rsyncd_start; t_done; }
t_ferryd_start bd_ferryd "[m]
    path = $MOD
    read only = no" || { t_fail ferryd_start; t_done; }

check_push_rsyncd() {
    "$FERRY" -a --link-dest=../prev "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/m/new/" || return 1
    t_compare "$SRC" "$T/mod_r/new" || return 1
    [ "$(stat -c %i "$T/mod_r/new/f1")" = "$(stat -c %i "$T/mod_r/prev/f1")" ]
}
t_check link_dest_push_to_rsyncd check_push_rsyncd

check_push_ferryd() {
    "$RSYNC" -a --link-dest=../prev "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/m/new/" || return 1
    t_compare "$SRC" "$MOD/new" || return 1
    [ "$(stat -c %i "$MOD/new/f1")" = "$(stat -c %i "$MOD/prev/f1")" ]
}
t_check link_dest_rsync_push_to_ferryd check_push_ferryd

check_escape() {
    # a basis dir outside the module is not used
    ! "$RSYNC" -a --link-dest=../../.. "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/m/new2/" \
        >"$T/escape.out" 2>&1 || grep -q "does not exist" "$T/escape.out" || return 1
    t_compare "$SRC" "$MOD/new2"
}
t_check link_dest_cannot_leave_module check_escape

check_backup_ferryd() {
    "$RSYNC" -a -b --backup-dir=/bak "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/m/prev/" || return 1
    [ -f "$MOD/bak/f2" ] && t_compare "$SRC" "$MOD/prev" --ignore gone 2>/dev/null ||
        cmp "$SRC/f2" "$MOD/prev/f2"
}
t_check backup_dir_in_module check_backup_ferryd

check_pull_rsyncd_sizes() {
    rm -rf "$T/pulls"
    "$FERRY" -a --max-size=30k "rsync://127.0.0.1:$RSYNCD_PORT/m/new/" "$T/pulls/" || return 1
    [ -f "$T/pulls/f1" ] && [ ! -e "$T/pulls/f3" ]
}
t_check max_size_pull_from_rsyncd check_pull_rsyncd_sizes

t_done
