#!/bin/bash
# --backup of every kind of entry, a lone source given a new name, the
# modes of new entries without -p, and errors in filter merge files. Each
# case runs ferry and real rsync on identical fixtures and wants the same
# result (issue 21, clusters 7, 12, 14 and 15). Run against real rsync
# (FERRY=/usr/bin/rsync) every check must pass.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$FERRY"
t_setup

# both NAME SETUP ARGS... -- run SETUP (a function taking a directory) in
# $T/NAME.f and $T/NAME.r, then ferry in the first and rsync in the second,
# each from that directory with ARGS (@SIDE@ in them becomes f or r);
# output in NAME.fo/.ro, exit status in NAME.fc/.rc.
both() {
    local name=$1 setup=$2 tool dir side
    shift 2
    for side in f r; do
        dir=$T/$name.$side
        tool=$FERRY
        [ $side = r ] && tool=$RSYNC
        rm -rf "$dir" && mkdir -p "$dir" && "$setup" "$dir" || return 1
        (cd "$dir" && timeout 60 "$tool" "${@//@SIDE@/$side}" >"$T/$name.${side}o" 2>&1)
        echo $? >"$T/$name.${side}c"
    done
}

same_rc() { [ "$(cat "$T/$1.fc")" = "$(cat "$T/$1.rc")" ] || {
    echo "exit: ferry $(cat "$T/$1.fc"), rsync $(cat "$T/$1.rc")"; return 1; }; }

# listing DIR -- type, mode, device numbers and link target of each entry
listing() {
    (cd "$1" && find . -mindepth 1 -printf '%y %m %p %l\n' | sort) &&
        (cd "$1" && find . -mindepth 1 \( -type b -o -type c \) -exec stat -c '%n %t:%T' {} + | sort)
}

same_tree() {
    local sub=$1
    diff <(listing "$T/$sub" | sed "s#$T/[^ ]*##") <(listing "$T/${sub/.f/.r}" | sed "s#$T/[^ ]*##")
}

# ------------------------------------------------------------ --backup

# the backup name is held by a directory: it gives way
occupied() {
    mkdir -p "$1/src/deep" "$1/dst/deep" "$1/bak/dname/sub" &&
        echo new >"$1/src/deep/f" && echo old >"$1/dst/deep/f" &&
        echo gone >"$1/dst/dname" && touch -d 2001-01-01 "$1/dst/deep/f"
}
both occupied occupied -a --delete-delay --backup "--backup-dir=$T/occupied.@SIDE@/bak" src/ dst/
check_occupied() {
    same_rc occupied && [ "$(cat "$T/occupied.fc")" = 0 ] &&
        [ "$(cat "$T/occupied.f/bak/dname")" = gone ] && same_tree occupied.f
}
t_check backup_clears_occupied_name check_occupied

# a symlink replaced by another symlink is kept as name~
relink() {
    mkdir -p "$1/src" "$1/dst" && ln -s new "$1/src/lnk" && ln -s old "$1/dst/lnk"
}
both relink relink -rl -b src/ dst/
check_relink() {
    same_rc relink && [ "$(readlink "$T/relink.f/dst/lnk~")" = old ] && same_tree relink.f
}
t_check backup_symlink_replaced_by_symlink check_relink

# a name already ending in the suffix is deleted, not backed up as name~~
suffixed() {
    mkdir -p "$1/src" "$1/dst" && echo k >"$1/src/k" && echo p >"$1/dst/plain" &&
        echo s >"$1/dst/stale~"
}
both suffixed suffixed -a -b --delete '--filter=R *~' src/ dst/
check_suffixed() {
    same_rc suffixed && [ -e "$T/suffixed.f/dst/plain~" ] && [ ! -e "$T/suffixed.f/dst/stale~" ] &&
        [ ! -e "$T/suffixed.f/dst/stale~~" ] && same_tree suffixed.f
}
t_check backup_suffixed_name_not_again check_suffixed

# --safe-links: an unsafe link is dropped, not kept as a backup; a safe
# one is kept
safelink() {
    mkdir -p "$1/s" "$1/d" && echo r >"$1/s/escape" && echo o >"$1/s/ok" &&
        ln -s ../../sensitive "$1/d/escape" && ln -s keep "$1/d/ok"
}
both safelink safelink -a --backup --suffix=.bak --safe-links --info=symsafe s/ d/
check_safelink() {
    same_rc safelink && [ ! -L "$T/safelink.f/d/escape.bak" ] &&
        [ "$(readlink "$T/safelink.f/d/ok.bak")" = keep ] && same_tree safelink.f &&
        diff "$T/safelink.fo" "$T/safelink.ro"
}
t_check backup_safe_links_drops_unsafe_link check_safelink

# --backup-dir on another file system: each kind is recreated there, and
# a FIFO is never opened (it would wait for a writer)
XDEV=""
for d in /dev/shm /run/shm; do
    if [ -d "$d" ] && [ -w "$d" ] && [ "$(stat -c %d "$d")" != "$(stat -c %d "$T")" ]; then
        XDEV=$d
        break
    fi
done
if [ -n "$XDEV" ]; then
    XB=$(mktemp -d "$XDEV/ferry-61.XXXXXX")
    crossdev() {
        local side=${1##*.}
        rm -rf "${XB:?}/$side" && mkdir -p "$XB/$side" "$1/src" "$1/dst" &&
            echo gen1 >"$1/dst/reg" && printf 'gen1\ngen1\n' >"$1/src/reg" &&
            ln -s t1 "$1/dst/lnk" && ln -s t2 "$1/src/lnk" &&
            mkfifo "$1/dst/fifo" && echo r >"$1/src/fifo"
    }
    both crossdev crossdev -rlpD --backup "--backup-dir=$XB/@SIDE@" src/ dst/
    check_crossdev() {
        same_rc crossdev && [ "$(cat "$T/crossdev.fc")" = 0 ] &&
            [ "$(cat "$XB/f/reg")" = gen1 ] && [ "$(readlink "$XB/f/lnk")" = t1 ] &&
            [ -p "$XB/f/fifo" ] && diff <(cd "$XB/f" && find . -printf '%y %m %p %l\n' | sort) \
                <(cd "$XB/r" && find . -printf '%y %m %p %l\n' | sort)
    }
    t_check backup_crossdev_recreates_each_kind check_crossdev
    rm -rf "${XB:?}"
else
    t_skip backup_crossdev_recreates_each_kind "no writable directory on another file system"
fi

# ------------------------------------ a lone source given a new name

solo() {
    mkdir -p "$1/s" "$1/d" && ln -s x "$1/s/l1" && ln -s y "$1/d/l2" && mkfifo "$1/s/ff" &&
        mkfifo "$1/d/ff2" && chmod 600 "$1/d/ff2"
}
both solo_link solo -li s/l1 d/l2
check_solo_link() {
    same_rc solo_link && [ "$(readlink "$T/solo_link.f/d/l2")" = x ] &&
        [ ! -e "$T/solo_link.f/d/l1" ] && [ ! -L "$T/solo_link.f/d/l1" ] &&
        diff "$T/solo_link.fo" "$T/solo_link.ro"
}
t_check solo_symlink_takes_new_name check_solo_link
both solo_fifo solo -pDi s/ff d/ff2
check_solo_fifo() {
    same_rc solo_fifo && [ ! -e "$T/solo_fifo.f/d/ff" ] && same_tree solo_fifo.f &&
        diff "$T/solo_fifo.fo" "$T/solo_fifo.ro"
}
t_check solo_fifo_takes_new_name check_solo_fifo
if [ "$(id -u)" = 0 ]; then
    solodev() {
        mkdir -p "$1/s" "$1/d" && mknod "$1/s/block3" b 7 3 && mknod "$1/d/block" b 7 1
    }
    both solo_dev solodev -Di s/block3 d/block
    check_solo_dev() {
        same_rc solo_dev && [ ! -e "$T/solo_dev.f/d/block3" ] && same_tree solo_dev.f &&
            diff "$T/solo_dev.fo" "$T/solo_dev.ro"
    }
    t_check solo_device_takes_new_name check_solo_dev
else
    t_skip solo_device_takes_new_name "mknod needs root"
fi

# ------------------------------------------- modes of new entries, no -p

modes_src() {
    mkdir -p "$1/src/dir" "$1/to" && echo f >"$1/src/file" && echo p >"$1/src/prog" &&
        chmod 777 "$1/src/dir" && chmod 666 "$1/src/file" && chmod 777 "$1/src/prog"
}
if command -v setfacl >/dev/null && mkdir "$T/acltry" && setfacl -m d:u::7 "$T/acltry" 2>/dev/null; then
    dacl() { modes_src "$1" && setfacl -m d:u::7,d:g::7,d:o:5 "$1/to"; }
    both dacl dacl -r src/dir src/file src/prog to/sub/
    check_dacl() {
        same_rc dacl && same_tree dacl.f && [ "$(stat -c %a "$T/dacl.f/to/sub/file")" = 664 ]
    }
    t_check new_modes_follow_default_acl check_dacl
else
    t_skip new_modes_follow_default_acl "no default ACLs here"
fi
umasked() { modes_src "$1"; }
(umask 077 && both umasked umasked -r src/dir src/file src/prog to/)
check_umasked() { same_rc umasked && same_tree umasked.f; }
t_check new_modes_follow_umask check_umasked
sgid() { modes_src "$1" && chmod 2770 "$1/to" && chmod 2775 "$1/src/dir"; }
both sgid sgid -r src/dir to/
check_sgid() { same_rc sgid && same_tree sgid.f && [ -g "$T/sgid.f/to/dir" ]; }
t_check new_dir_keeps_inherited_setgid check_sgid

# --------------------------------------------------- filter merge files

SECRET=TOP-SECRET-abc123
perdir_bad() {
    mkdir -p "$1/src" "$1/dst" && echo x >"$1/src/f" && echo "$SECRET" >"$1/secret" &&
        echo ': ../secret' >"$1/src/.rsync-filter"
}
both perdir_bad perdir_bad -r -F src/ dst/
check_perdir_bad() {
    same_rc perdir_bad && [ "$(cat "$T/perdir_bad.fc")" = 1 ] &&
        ! grep -q "$SECRET" "$T/perdir_bad.fo" && grep -q 'a file read earlier' "$T/perdir_bad.fo"
}
t_check perdir_merge_bad_rule_aborts check_perdir_bad

perdir_line() { mkdir -p "$1/src" "$1/dst" && echo "Zbad-$SECRET" >"$1/src/.rsync-filter"; }
both perdir_line perdir_line -r -F src/ dst/
check_perdir_line() {
    same_rc perdir_line && ! grep -q "$SECRET" "$T/perdir_line.fo" &&
        grep -q 'src/.rsync-filter line 1>' "$T/perdir_line.fo"
}
t_check perdir_bad_rule_named_by_location check_perdir_line

nested_open() {
    mkdir -p "$1/src" "$1/dst" && echo ". $1/nested" >"$1/outer" && echo ". $SECRET" >"$1/nested"
}
both nested_open nested_open -r --filter=". outer" src/ dst/
check_nested_open() {
    same_rc nested_open && [ "$(cat "$T/nested_open.fc")" = 11 ] &&
        ! grep -q "$SECRET" "$T/nested_open.fo" &&
        grep -q 'failed to open exclude file <rule from a file named at .*outer line 1>' "$T/nested_open.fo"
}
t_check nested_merge_open_failure_exit_11 check_nested_open

selfmerge() { mkdir -p "$1/src" "$1/dst" && echo '. .merge' >"$1/src/.merge" && echo x >"$1/src/f"; }
both selfmerge selfmerge -a '--filter=: .merge' src/ dst/
check_selfmerge() {
    same_rc selfmerge && [ "$(cat "$T/selfmerge.fc")" = 11 ] &&
        grep -q 'merge-file include depth limit (32) exceeded' "$T/selfmerge.fo"
}
t_check merge_nesting_capped_at_32 check_selfmerge

# ------------------------------------------------------------------- -X

# xattr_list DIR -- every user xattr below DIR, by path
xattr_list() { (cd "$1" && getfattr -R -d -m '^user\.' . 2>/dev/null); }

LONGV="a value longer than thirty-two bytes, sent as a digest first"
if command -v setfattr >/dev/null && touch "$T/xtry" && setfattr -n user.t -v 1 "$T/xtry" 2>/dev/null; then
    # a directory below the top level, under incremental recursion
    xdeep() {
        mkdir -p "$1/src/foo/bar" "$1/src/foo/baz" && echo 1 >"$1/src/foo/bar/f" &&
            setfattr -n user.a -v 1 "$1/src/foo" && setfattr -n user.b -v "$LONGV" "$1/src/foo/bar" &&
            setfattr -n user.c -v 3 "$1/src/foo/bar/f"
    }
    both xdeep xdeep -aX src/ dst/
    check_xdeep() {
        same_rc xdeep && [ "$(cat "$T/xdeep.fc")" = 0 ] &&
            diff <(xattr_list "$T/xdeep.f/src") <(xattr_list "$T/xdeep.f/dst")
    }
    t_check xattrs_on_dirs_below_top_incremental check_xdeep

    # an abbreviated value shared by several files (here hard links) that
    # the destination already holds for an earlier one, whose other
    # xattr changed
    xhlink() {
        mkdir -p "$1/src" "$1/dst" && echo a >"$1/src/a" && echo same >"$1/src/h1" &&
            ln "$1/src/h1" "$1/src/h2" && cp -a "$1/src/a" "$1/dst/a" &&
            setfattr -n user.s -v old "$1/dst/a" && setfattr -n user.long -v "$LONGV" "$1/dst/a" &&
            for f in a h1; do
                setfattr -n user.s -v new "$1/src/$f" && setfattr -n user.long -v "$LONGV" "$1/src/$f" ||
                    return 1
            done
    }
    both xhlink xhlink -aHX src/ dst/
    check_xhlink() {
        same_rc xhlink && [ "$(cat "$T/xhlink.fc")" = 0 ] &&
            diff <(xattr_list "$T/xhlink.f/src") <(xattr_list "$T/xhlink.f/dst")
    }
    t_check xattrs_abbreviated_value_shared check_xhlink

    # --copy-dest copies carry the xattrs; --link-dest links only a
    # file whose xattrs match
    xalt() {
        mkdir -p "$1/src" "$1/alt" && echo hi >"$1/src/f" && echo hi >"$1/src/g" &&
            setfattr -n user.a -v val "$1/src/f" && setfattr -n user.long -v "$LONGV" "$1/src/f" &&
            setfattr -n user.a -v new "$1/src/g" && cp -a "$1/src/f" "$1/src/g" "$1/alt/" &&
            setfattr -n user.a -v old "$1/alt/g"
    }
    both xcopy xalt -aX --copy-dest=../alt src/ dst/
    check_xcopy() {
        same_rc xcopy && diff <(xattr_list "$T/xcopy.f/src") <(xattr_list "$T/xcopy.f/dst")
    }
    t_check xattrs_copy_dest check_xcopy
    both xlink xalt -aX --link-dest=../alt src/ dst/
    check_xlink() {
        same_rc xlink && diff <(xattr_list "$T/xlink.f/src") <(xattr_list "$T/xlink.f/dst") &&
            [ "$(stat -c %h "$T/xlink.f/dst/f")" = "$(stat -c %h "$T/xlink.r/dst/f")" ] &&
            [ "$(stat -c %h "$T/xlink.f/dst/g")" = "$(stat -c %h "$T/xlink.r/dst/g")" ]
    }
    t_check xattrs_link_dest_only_when_equal check_xlink
else
    t_skip xattrs "no user xattrs here"
fi

t_done
