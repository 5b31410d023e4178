# netns-lib.sh — sourced by the bench/*-netns.sh scripts (after they set
# $top, the repository's top): two or more "hosts" as network namespaces
# joined by a bridge (the test suite's tests/fixtures/netns-hosts.sh),
# with dt's ssh launcher pointed at them. Needs root and sshd.
#
#   netns_up DIR N   start N hosts under DIR/ns (DIR: the script's temp
#                    folder, removed with them at exit), load their
#                    NETNS_* variables and export the launcher's
#                    environment (key, known_hosts, no agent, interface)

netns_up() {
    NETNS_DIR=$1
    NETNS_FX=$top/tests/fixtures/netns-hosts.sh
    trap 'sh "$NETNS_FX" stop "$NETNS_DIR/ns" >/dev/null 2>&1; rm -rf "$NETNS_DIR"' EXIT
    trap 'exit 130' INT TERM
    sh "$NETNS_FX" start "$NETNS_DIR/ns" "$2" ||
        { echo "cannot start the namespace hosts" >&2; exit 1; }
    . "$NETNS_DIR/ns/env"
    export DT_LAUNCHER_SSH_IDENTITY="$SSH_KEY"
    export DT_LAUNCHER_SSH_KNOWN_HOSTS="$SSH_KNOWN_HOSTS"
    export DT_LAUNCHER_SSH_USE_AGENT=no DT_CLUSTER_INTERFACE="$NETNS_SUBNET"
}
