#!/bin/bash
# The built-in ssh client and ssh_config (issue 20 item 12): it honours a
# config exactly as OpenSSH does, or leaves it to a spawned ssh. Every case
# runs ferry (auto, and --ssh=builtin) and real rsync with the same -e
# "ssh -F FILE" (OpenSSH takes ~/.ssh/config from the passwd entry, not
# $HOME, so the test's configs are named with -F; HOME is the test's own
# all the same). Cases: `Host * !prod` / `StrictHostKeyChecking no` must
# not connect to prod with an unknown host key, while dev connects; a
# negation the built-in honours itself (`Host !localhost *`) and one it
# leaves to ssh; HostName and the Host lines after it; an Included file's
# settings and its strict host-key checking; a Match block (spawned, said
# under -vv, refused by --ssh=builtin); -F none; HashKnownHosts; SendEnv
# and GSSAPIAuthentication under `Host *`. A wrapper ssh on PATH shows
# when ssh ran, and a PATH without ssh proves when it did not.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

t_sshd_start
case $? in
0) t_pass sshd_start ;;
2)
    t_skip "$(_t_script_name)" "$T_SKIP_REASON"
    t_done
    ;;
*)
    t_skip "$(_t_script_name)" "sshd did not start (see the log)"
    t_done
    ;;
esac

export HOME=$T/home
mkdir -p "$HOME/.ssh"

D=$T/ssh
KEY=$D/client_key
HOSTKEY=$(cut -d' ' -f1-2 "$D/host_key.pub")
ME=$(id -un)

# known_hosts with the key under both names the cases use
KH_BOTH=$T/kh_both
printf '[127.0.0.1]:%s %s\n[localhost]:%s %s\n' "$SSHD_PORT" "$HOSTKEY" "$SSHD_PORT" "$HOSTKEY" \
    >"$KH_BOTH"

# PATHs: one with no ssh at all, one whose ssh logs each call.
NOSSH=$T/nossh-bin
mkdir -p "$NOSSH"
ln -s "$(command -v "$RSYNC")" "$NOSSH/rsync"
ln -s "$(command -v env)" "$NOSSH/env"
REAL_SSH=$(command -v ssh)
WRAP=$T/wrap-bin
mkdir -p "$WRAP"
cat >"$WRAP/ssh" <<EOF
#!/bin/sh
echo "ssh \$*" >>"$T/ssh-calls"
exec "$REAL_SSH" "\$@"
EOF
chmod 0755 "$WRAP/ssh"
WPATH=$WRAP:$PATH

SRC=$T/src
mkdir -p "$SRC/d" && echo one >"$SRC/a" && echo two >"$SRC/d/b"

# ------------------------------------------------------------------ helpers

# run OUT CMD... -- OUT.out, OUT.err, OUT.rc get CMD's stdout, stderr, exit.
run() {
    local out=$1
    shift
    echo "--- run $(basename "$out"): $*"
    (umask 022 && exec "$@") >"$out.out" 2>"$out.err" </dev/null
    echo $? >"$out.rc"
    echo "--- exit $(cat "$out.rc")"
}

# connected RUN DST -- exit 0 and the tree arrived
connected() {
    [ "$(cat "$1.rc")" = 0 ] && t_compare "$SRC" "$2" --no-hardlinks && return 0
    echo "expected a transfer"
    show_run "$1"
    return 1
}

# refused_hostkey RUN DST -- failed on the host key, as ssh words it, and
# wrote nothing
refused_hostkey() {
    if [ "$(cat "$1.rc")" != 0 ] && grep -q 'Host key verification failed' "$1.err" &&
        [ ! -e "$2" ]; then
        return 0
    fi
    echo "expected a host key refusal"
    show_run "$1"
    return 1
}

# fails_with RUN CODE REGEX
fails_with() {
    if [ "$(cat "$1.rc")" = "$2" ] && grep -qE -- "$3" "$1.err"; then
        return 0
    fi
    echo "expected exit $2 and /$3/"
    show_run "$1"
    return 1
}

ssh_calls_reset() { : >"$T/ssh-calls"; }
ssh_spawned() {
    [ -s "$T/ssh-calls" ] && return 0
    echo "ssh was not spawned"
    return 1
}
no_ssh_spawned() {
    [ ! -s "$T/ssh-calls" ] && return 0
    echo "ssh was spawned:"
    cat "$T/ssh-calls"
    return 1
}

# same_outcome A B -- both succeeded or both failed
same_outcome() {
    local a b
    a=$(cat "$1.rc") b=$(cat "$2.rc")
    { [ "$a" = 0 ] && [ "$b" = 0 ]; } || { [ "$a" != 0 ] && [ "$b" != 0 ]; } && return 0
    echo "exit $a for $(basename "$1"), $b for $(basename "$2")"
    return 1
}

# common FILE KNOWN_HOSTS -- the Host * settings every config ends with
common() {
    cat >>"$1" <<EOF
Host *
  Port $SSHD_PORT
  User $ME
  IdentityFile $KEY
  UserKnownHostsFile $2
  GlobalKnownHostsFile /dev/null
  BatchMode yes
EOF
}

# trio TAG CFG HOST -- ferry (auto, ssh on PATH logging its calls), ferry
# --ssh=builtin without ssh, and rsync, each pulling HOST:$SRC/ with
# -e "ssh -F CFG"; results TAG.auto, TAG.builtin, TAG.rsync.
trio() {
    local tag=$1 cfg=$2 host=$3
    ssh_calls_reset
    run "$T/$tag.auto" env PATH="$WPATH" "$FERRY" -e "ssh -F $cfg" -a "$host:$SRC/" "$T/$tag.auto.d/"
    cp "$T/ssh-calls" "$T/$tag.auto.calls"
    run "$T/$tag.builtin" env PATH="$NOSSH" "$FERRY" -e "ssh -F $cfg" --ssh=builtin -a \
        "$host:$SRC/" "$T/$tag.builtin.d/"
    run "$T/$tag.rsync" "$RSYNC" -e "ssh -F $cfg" -a "$host:$SRC/" "$T/$tag.rsync.d/"
}

auto_spawned() {
    [ -s "$T/$1.auto.calls" ] && return 0
    echo "ssh was not spawned for $1"
    return 1
}
auto_not_spawned() {
    [ ! -s "$T/$1.auto.calls" ] && return 0
    echo "ssh was spawned for $1:"
    cat "$T/$1.auto.calls"
    return 1
}

# ------------------------------------- the issue: Host * !prod, no checking

# prod and dev both lead to the test's sshd; known_hosts starts empty, so
# only "StrictHostKeyChecking no" lets a connection through -- and it must
# not apply to prod.
mk_headline() {
    : >"$T/kh_$1"
    cat >"$T/cfg_$1" <<EOF
Host * !prod
  StrictHostKeyChecking no
Host prod dev
  HostName 127.0.0.1
EOF
    common "$T/cfg_$1" "$T/kh_$1"
}
for h in prod dev; do
    # a fresh, empty known_hosts for each run: "no" records the key
    for who in auto builtin rsync; do
        mk_headline "${h}_$who"
    done
    ssh_calls_reset
    run "$T/neg_$h.auto" env PATH="$WPATH" "$FERRY" -e "ssh -F $T/cfg_${h}_auto" -a \
        "$h:$SRC/" "$T/neg_$h.auto.d/"
    cp "$T/ssh-calls" "$T/neg_$h.auto.calls"
    run "$T/neg_$h.builtin" env PATH="$NOSSH" "$FERRY" -e "ssh -F $T/cfg_${h}_builtin" \
        --ssh=builtin -a "$h:$SRC/" "$T/neg_$h.builtin.d/"
    run "$T/neg_$h.rsync" "$RSYNC" -e "ssh -F $T/cfg_${h}_rsync" -a "$h:$SRC/" "$T/neg_$h.rsync.d/"
done
t_check rsync_negation_prod_refused refused_hostkey "$T/neg_prod.rsync" "$T/neg_prod.rsync.d"
t_check rsync_negation_dev_connects connected "$T/neg_dev.rsync" "$T/neg_dev.rsync.d"
t_check negation_prod_refused refused_hostkey "$T/neg_prod.auto" "$T/neg_prod.auto.d"
t_check negation_prod_known_hosts_untouched test ! -s "$T/kh_prod_auto"
t_check negation_dev_connects connected "$T/neg_dev.auto" "$T/neg_dev.auto.d"
t_check negation_prod_as_rsync same_outcome "$T/neg_prod.auto" "$T/neg_prod.rsync"
t_check negation_dev_as_rsync same_outcome "$T/neg_dev.auto" "$T/neg_dev.rsync"
# StrictHostKeyChecking no decides per host: left to ssh
t_check negation_prod_spawned auto_spawned neg_prod
t_check negation_dev_spawned auto_spawned neg_dev
t_check negation_builtin_refuses_prod fails_with "$T/neg_prod.builtin" 1 \
    'ssh=builtin: the built-in ssh cannot honour .*(negated pattern|StrictHostKeyChecking no)'
t_check negation_builtin_refuses_dev fails_with "$T/neg_dev.builtin" 1 \
    'ssh=builtin: the built-in ssh cannot honour .*(negated pattern|StrictHostKeyChecking no)'
t_check negation_builtin_wrote_nothing test ! -e "$T/neg_prod.builtin.d"

# --------------------------------- a negation the built-in applies itself

# Only hosts other than localhost get the known_hosts file holding the key;
# localhost gets an empty one and strict checking. Negation first: libssh
# honours it, so no ssh runs.
: >"$T/kh_empty"
cat >"$T/cfg_negfirst" <<EOF
Host !localhost *
  UserKnownHostsFile $KH_BOTH
Host *
  StrictHostKeyChecking yes
EOF
common "$T/cfg_negfirst" "$T/kh_empty"
trio negfirst_ip "$T/cfg_negfirst" 127.0.0.1
trio negfirst_lh "$T/cfg_negfirst" localhost
t_check rsync_negfirst_other_connects connected "$T/negfirst_ip.rsync" "$T/negfirst_ip.rsync.d"
t_check rsync_negfirst_negated_refused refused_hostkey "$T/negfirst_lh.rsync" "$T/negfirst_lh.rsync.d"
t_check negfirst_other_connects connected "$T/negfirst_ip.auto" "$T/negfirst_ip.auto.d"
t_check negfirst_other_builtin connected "$T/negfirst_ip.builtin" "$T/negfirst_ip.builtin.d"
t_check negfirst_other_not_spawned auto_not_spawned negfirst_ip
t_check negfirst_negated_refused refused_hostkey "$T/negfirst_lh.auto" "$T/negfirst_lh.auto.d"
t_check negfirst_negated_builtin_refused refused_hostkey "$T/negfirst_lh.builtin" \
    "$T/negfirst_lh.builtin.d"
t_check negfirst_negated_not_spawned auto_not_spawned negfirst_lh
t_check negfirst_empty_known_hosts_untouched test ! -s "$T/kh_empty"

# The same rule with the negation last, which libssh 0.10 gets wrong (it
# applies the block to localhost): ssh runs instead.
sed 's/^Host !localhost \*$/Host * !localhost/' "$T/cfg_negfirst" >"$T/cfg_neglast"
trio neglast_ip "$T/cfg_neglast" 127.0.0.1
trio neglast_lh "$T/cfg_neglast" localhost
t_check neglast_other_connects connected "$T/neglast_ip.auto" "$T/neglast_ip.auto.d"
t_check neglast_negated_refused refused_hostkey "$T/neglast_lh.auto" "$T/neglast_lh.auto.d"
t_check neglast_negated_as_rsync same_outcome "$T/neglast_lh.auto" "$T/neglast_lh.rsync"
t_check neglast_spawned auto_spawned neglast_lh
t_check neglast_builtin_refused fails_with "$T/neglast_lh.builtin" 1 \
    'ssh=builtin: the built-in ssh cannot honour .*negated pattern'

# ----------------------------------------------------------------- HostName

# An alias with a HostName: the built-in takes it.
printf 'Host dev\n  HostName 127.0.0.1\nHost *\n  StrictHostKeyChecking yes\n' >"$T/cfg_hn"
common "$T/cfg_hn" "$KH_BOTH"
trio hn "$T/cfg_hn" dev
t_check rsync_hostname_alias connected "$T/hn.rsync" "$T/hn.rsync.d"
t_check hostname_alias connected "$T/hn.auto" "$T/hn.auto.d"
t_check hostname_alias_builtin connected "$T/hn.builtin" "$T/hn.builtin.d"
t_check hostname_alias_not_spawned auto_not_spawned hn

# A Host line after it that matches the new name but not the alias: ssh
# skips it (and connects), libssh 0.10 would apply it (an empty
# known_hosts: refused). ssh runs instead.
printf 'Host dev\n  HostName 127.0.0.1\nHost 127.0.0.1\n  UserKnownHostsFile %s\n' \
    "$T/kh_empty" >"$T/cfg_hn2"
printf 'Host *\n  StrictHostKeyChecking yes\n' >>"$T/cfg_hn2"
common "$T/cfg_hn2" "$KH_BOTH"
trio hn2 "$T/cfg_hn2" dev
t_check rsync_hostname_later_host_skipped connected "$T/hn2.rsync" "$T/hn2.rsync.d"
t_check hostname_later_host_skipped connected "$T/hn2.auto" "$T/hn2.auto.d"
t_check hostname_later_host_spawned auto_spawned hn2
t_check hostname_later_host_builtin_refused fails_with "$T/hn2.builtin" 1 \
    'ssh=builtin: the built-in ssh cannot honour dev: libssh would match the Host lines after HostName 127.0.0.1'

# ------------------------------------------------------------------ Include

# Everything comes from an Included file: without it ssh would try port 22.
mkdir -p "$T/inc.d"
common "$T/inc.d/10-test.conf" "$KH_BOTH"
printf 'Include %s/inc.d/*.conf\n' "$T" >"$T/cfg_include"
trio include "$T/cfg_include" 127.0.0.1
t_check rsync_include_connects connected "$T/include.rsync" "$T/include.rsync.d"
t_check include_connects connected "$T/include.auto" "$T/include.auto.d"
t_check include_not_spawned auto_not_spawned include
t_check include_builtin connected "$T/include.builtin" "$T/include.builtin.d"

# An Included file's strict checking with an empty known_hosts refuses.
mkdir -p "$T/inc_strict.d"
{
    echo "Host *"
    echo "  StrictHostKeyChecking yes"
} >"$T/inc_strict.d/00-strict.conf"
common "$T/inc_strict.d/10-test.conf" "$T/kh_empty"
printf 'Include %s/inc_strict.d/*.conf\n' "$T" >"$T/cfg_inc_strict"
trio inc_strict "$T/cfg_inc_strict" 127.0.0.1
t_check rsync_include_strict_refused refused_hostkey "$T/inc_strict.rsync" "$T/inc_strict.rsync.d"
t_check include_strict_refused refused_hostkey "$T/inc_strict.auto" "$T/inc_strict.auto.d"
t_check include_strict_builtin_refused refused_hostkey "$T/inc_strict.builtin" \
    "$T/inc_strict.builtin.d"
t_check include_strict_not_spawned auto_not_spawned inc_strict

# A relative Include is read from ~/.ssh of the passwd entry by both ssh
# and libssh, but HOME points elsewhere here (ssh globs "~/.ssh" with it):
# left to ssh.
printf 'Include rel-test.conf\n' >"$T/cfg_relinc"
common "$T/cfg_relinc" "$KH_BOTH"
trio relinc "$T/cfg_relinc" 127.0.0.1
t_check relative_include_as_rsync same_outcome "$T/relinc.auto" "$T/relinc.rsync"
t_check relative_include_spawned auto_spawned relinc
t_check relative_include_builtin_refused fails_with "$T/relinc.builtin" 1 \
    'ssh=builtin: the built-in ssh cannot honour .*Include rel-test.conf'

# ------------------------------------------------------------------ Match

# A Match block: libssh does not evaluate every criterion as ssh does, so
# ssh runs; -vv says why, --ssh=builtin refuses.
{
    echo "Match host 127.0.0.1"
    echo "  UserKnownHostsFile $KH_BOTH"
} >"$T/cfg_match"
common "$T/cfg_match" "$T/kh_empty"
trio match "$T/cfg_match" 127.0.0.1
t_check rsync_match_connects connected "$T/match.rsync" "$T/match.rsync.d"
t_check match_connects connected "$T/match.auto" "$T/match.auto.d"
t_check match_spawned auto_spawned match
t_check match_builtin_refused fails_with "$T/match.builtin" 1 \
    "ssh=builtin: the built-in ssh cannot honour $T/cfg_match line 1: Match"
run "$T/match_vv" env PATH="$WPATH" "$FERRY" -e "ssh -F $T/cfg_match" -avv "127.0.0.1:$SRC/" \
    "$T/match_vv.d/"
vv_says_why() {
    grep -q "^spawning ssh: the built-in ssh cannot honour $T/cfg_match line 1: Match" "$1.out" &&
        return 0
    show_run "$1"
    return 1
}
t_check match_vv_says_why vv_says_why "$T/match_vv"

# A keyword libssh ignores (the built-in sends no keepalives): ssh runs.
printf 'Host *\n  ServerAliveInterval 30\n' >"$T/cfg_alive"
common "$T/cfg_alive" "$KH_BOTH"
trio alive "$T/cfg_alive" 127.0.0.1
t_check unsupported_keyword_connects connected "$T/alive.auto" "$T/alive.auto.d"
t_check unsupported_keyword_spawned auto_spawned alive
t_check unsupported_keyword_builtin_refused fails_with "$T/alive.builtin" 1 \
    'ServerAliveInterval is not applied by the built-in client'

# -F with a file that cannot be read: ssh's own error, through ssh.
trio missing "$T/no-such-config" 127.0.0.1
t_check missing_F_as_rsync same_outcome "$T/missing.auto" "$T/missing.rsync"
t_check missing_F_spawned auto_spawned missing

# -F none: no config file at all, for ssh and the built-in.
ENONE="ssh -F none -p $SSHD_PORT -l $ME -i $KEY -o UserKnownHostsFile=$KH_BOTH -o StrictHostKeyChecking=yes"
run "$T/none.builtin" env PATH="$NOSSH" "$FERRY" -e "$ENONE" --ssh=builtin -a "127.0.0.1:$SRC/" \
    "$T/none.builtin.d/"
run "$T/none.rsync" "$RSYNC" -e "$ENONE" -a "127.0.0.1:$SRC/" "$T/none.rsync.d/"
t_check rsync_F_none connected "$T/none.rsync" "$T/none.rsync.d"
t_check F_none_builtin connected "$T/none.builtin" "$T/none.builtin.d"

# ------------------------------------------------------- HashKnownHosts

# accept-new on the command line records the key; HashKnownHosts yes for
# every host makes ssh hash the name, and the built-in does the same.
printf 'Host *\n  HashKnownHosts yes\n' >"$T/cfg_hash"
common "$T/cfg_hash" /dev/null
for who in ferry rsync; do
    : >"$T/kh_hash_$who"
    e="ssh -F $T/cfg_hash -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=$T/kh_hash_$who"
    if [ "$who" = ferry ]; then
        run "$T/hash_$who" env PATH="$NOSSH" "$FERRY" -e "$e" -a "127.0.0.1:$SRC/" "$T/hash_$who.d/"
    else
        run "$T/hash_$who" "$RSYNC" -e "$e" -a "127.0.0.1:$SRC/" "$T/hash_$who.d/"
    fi
done
# hashed_key FILE -- one hashed line, which ssh-keygen finds under the name
hashed_key() {
    local got
    got=$(ssh-keygen -F "[127.0.0.1]:$SSHD_PORT" -f "$1" | grep -v '^#' | cut -d' ' -f2-3)
    if [ "$(wc -l <"$1")" = 1 ] && grep -q '^|1|[A-Za-z0-9+/]\{27\}=|[A-Za-z0-9+/]\{27\}= ' "$1" &&
        [ "$got" = "$HOSTKEY" ]; then
        return 0
    fi
    echo "$1 does not hold the hashed host key:"
    cat "$1"
    return 1
}
t_check rsync_hash_known_hosts hashed_key "$T/kh_hash_rsync"
t_check hash_known_hosts_connects connected "$T/hash_ferry" "$T/hash_ferry.d"
t_check hash_known_hosts_builtin hashed_key "$T/kh_hash_ferry"

# ------------------------------------------------------------------ SendEnv

# An sshd that accepts FERRY_T_* variables; the remote command writes what
# it got before running rsync.
if t_sshd_start_extra sshd_env "AcceptEnv=FERRY_T_*"; then
    t_pass sshd_env_start
    cat >"$T/cfg_env" <<EOF
Host *
  SendEnv FERRY_T_*
  Port $SSHD_EXTRA_PORT
  User $ME
  IdentityFile $KEY
  UserKnownHostsFile $D/known_hosts
  GlobalKnownHostsFile /dev/null
  BatchMode yes
EOF
    for who in ferry rsync; do
        prog=$FERRY
        pathv=$NOSSH
        [ "$who" = rsync ] && prog=$RSYNC pathv=$PATH
        run "$T/env_$who" env PATH="$pathv" FERRY_T_X="v $who" FERRY_OTHER=no "$prog" \
            -e "ssh -F $T/cfg_env" --rsync-path="echo \"\$FERRY_T_X/\$FERRY_OTHER\" >$T/env_$who.got; rsync" \
            -a "127.0.0.1:$SRC/" "$T/env_$who.d/"
    done
    env_got() {
        local got
        got=$(cat "$T/env_$1.got" 2>/dev/null)
        [ "$got" = "v $1/" ] && return 0
        echo "the remote got \"$got\", expected \"v $1/\""
        show_run "$T/env_$1"
        return 1
    }
    t_check rsync_sendenv env_got rsync
    t_check sendenv_builtin env_got ferry
    t_check sendenv_builtin_connects connected "$T/env_ferry" "$T/env_ferry.d"
else
    t_fail sshd_env_start "sshd with AcceptEnv did not start"
fi

# ------------------------------------------------------------------ GSSAPI

# GSSAPIAuthentication yes for every host, against an sshd that offers
# gssapi-with-mic: with no Kerberos ticket here ssh tries it and goes on to
# the key; so does the built-in.
if t_sshd_start_extra sshd_gss GSSAPIAuthentication=yes; then
    t_pass sshd_gss_start
    printf 'Host *\n  GSSAPIAuthentication yes\n  Port %s\n' "$SSHD_EXTRA_PORT" >"$T/cfg_gss"
    common "$T/cfg_gss" "$D/known_hosts"
    trio gss "$T/cfg_gss" 127.0.0.1
    offered() {
        ssh -F "$T/cfg_gss" -v 127.0.0.1 true 2>&1 </dev/null |
            grep -q 'Authentications that can continue: .*gssapi-with-mic'
    }
    t_check gss_offered_by_sshd offered
    t_check rsync_gssapi_then_key connected "$T/gss.rsync" "$T/gss.rsync.d"
    t_check gssapi_then_key connected "$T/gss.auto" "$T/gss.auto.d"
    t_check gssapi_builtin_then_key connected "$T/gss.builtin" "$T/gss.builtin.d"
    t_check gssapi_not_spawned auto_not_spawned gss
else
    t_fail sshd_gss_start "sshd with GSSAPIAuthentication=yes did not start"
fi

t_done
