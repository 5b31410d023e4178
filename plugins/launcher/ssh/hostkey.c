/* hostkey.c — the server's host key against known_hosts. Unknown and
 * changed keys are refused with the key's SHA256 fingerprint and the
 * commands that trust it; accept_new_host_keys = yes records unknown keys
 * (never changed ones), like OpenSSH's StrictHostKeyChecking=accept-new. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <dt/log.h>
#include "hostkey.h"
#include "ssh_types.h"

/* "[host]:port" as known_hosts spells a non-22 port. */
static void host_pattern(const ssh_conn_t *c, int port, char *buf, size_t len)
{
    if (port == 22)
        snprintf(buf, len, "%s", c->name);
    else
        snprintf(buf, len, "[%s]:%d", c->name, port);
}

dt_status_t ssh_verify_host_key(const ssh_opts_t *o, ssh_conn_t *c)
{
    int port = c->port > 0 ? c->port : o->port;
    ssh_key key = NULL;
    unsigned char *hash = NULL;
    size_t hlen = 0;
    char *fp = NULL;
    dt_status_t st = DT_ERR_AUTH;
    if (ssh_get_server_publickey(c->s, &key) != SSH_OK ||
        ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash,
                               &hlen) != 0 ||
        !(fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash,
                                        hlen))) {
        snprintf(c->err, sizeof c->err, "cannot read the server's host key: %s",
                 ssh_get_error(c->s));
        goto out;
    }
    const char *type = ssh_key_type_to_char(ssh_key_type(key));
    char pat[300];
    host_pattern(c, port, pat, sizeof pat);
    enum ssh_known_hosts_e known = ssh_session_is_known_server(c->s);
    switch (known) {
    case SSH_KNOWN_HOSTS_OK:
        st = DT_OK;
        break;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
        snprintf(c->err, sizeof c->err,
                 "REFUSED: the host key has CHANGED (or is of another type "
                 "than the one recorded): the server offers %s %s, which is "
                 "not the key %s lists for %s. This can be an attack. If the "
                 "host was really reinstalled, check the fingerprint on the "
                 "host (ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub), then: "
                 "ssh-keygen -R '%s' -f %s && ssh-keyscan -p %d %s >> %s",
                 type, fp, o->known_hosts, pat,
                 strncmp(type, "ssh-", 4) == 0 ? type + 4 : type, pat,
                 o->known_hosts, port, c->name, o->known_hosts);
        break;
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
        if (o->accept_new) {
            if (ssh_session_update_known_hosts(c->s) != SSH_OK) {
                snprintf(c->err, sizeof c->err,
                         "cannot record the new host key %s %s in %s: %s",
                         type, fp, o->known_hosts, ssh_get_error(c->s));
                break;
            }
            dt_warn("ssh launcher: %s: unknown host key %s %s trusted and "
                    "added to %s (accept_new_host_keys = yes)",
                    pat, type, fp, o->known_hosts);
            st = DT_OK;
            break;
        }
        snprintf(c->err, sizeof c->err,
                 "REFUSED: the host key is not known: %s has no entry for %s "
                 "(the server offers %s %s). Check that fingerprint on the "
                 "host (ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub), then "
                 "trust it: ssh-keyscan -p %d %s >> %s (or set "
                 "[launcher.ssh] accept_new_host_keys = yes to trust new "
                 "hosts on first use)",
                 o->known_hosts, pat, type, fp,
                 strncmp(type, "ssh-", 4) == 0 ? type + 4 : type, port,
                 c->name, o->known_hosts);
        break;
    default:
        snprintf(c->err, sizeof c->err,
                 "cannot check the host key (%s %s) against %s: %s", type, fp,
                 o->known_hosts, ssh_get_error(c->s));
        break;
    }
out:
    if (fp)
        ssh_string_free_char(fp);
    if (hash)
        ssh_clean_pubkey_hash(&hash);
    if (key)
        ssh_key_free(key);
    return st;
}
