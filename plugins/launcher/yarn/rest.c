/* rest.c — the ResourceManager REST API over libcurl, JSON with jansson
 * (both Debian libraries: no hand-written HTTP or JSON here). */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "yarn.h"

#define RESPONSE_MAX (4 << 20)

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
    strbuf_t *b = arg;
    size_t len = size * n;
    if (b->len + len > RESPONSE_MAX)
        return 0; /* abort: no RM answer is that large */
    sb_addn(b, data, len);
    return b->oom ? 0 : len;
}

const char *yarn_remote_message(json_t *resp)
{
    json_t *re = resp ? json_object_get(resp, "RemoteException") : NULL;
    const char *m = re ? json_string_value(json_object_get(re, "message"))
                       : NULL;
    return m ? m : "";
}

dt_status_t yarn_rest(const yarn_launcher_t *L, const char *method,
                      const char *path, json_t *body, long *http_code,
                      json_t **resp)
{
    dt_status_t st = DT_OK;
    char *url = NULL, *payload = NULL;
    strbuf_t answer = {0};
    struct curl_slist *headers = NULL;
    *resp = NULL;
    *http_code = 0;
    CURL *c = curl_easy_init();
    const char *sep = strchr(path, '?') ? "&" : "?";
    if (!c || asprintf(&url, "%s%s%s%s%s", L->conf.rm_url, path,
                       L->conf.user ? sep : "",
                       L->conf.user ? "user.name=" : "",
                       L->conf.user ? L->conf.user : "") < 0) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    headers = curl_slist_append(headers, "Accept: application/json");
    if (body) {
        payload = json_dumps(body, JSON_COMPACT);
        headers = curl_slist_append(headers,
                                    "Content-Type: application/json");
        if (!payload) {
            st = DT_ERR_NOMEM;
            goto out;
        }
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)L->conf.request_timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
        dt_error("yarn: %s %s%s: %s; check [launcher.yarn] rm_url and that "
                 "the ResourceManager is up",
                 method, L->conf.rm_url, path, curl_easy_strerror(rc));
        st = rc == CURLE_OPERATION_TIMEDOUT ? DT_ERR_TIMEOUT : DT_ERR_IO;
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, http_code);
    if (answer.len) {
        json_error_t err;
        *resp = json_loadb(answer.s, answer.len, 0, &err);
        if (!*resp) {
            dt_error("yarn: %s %s%s answered HTTP %ld with a body that is "
                     "not JSON (%s at %d): is rm_url a ResourceManager?",
                     method, L->conf.rm_url, path, *http_code, err.text,
                     err.position);
            st = DT_ERR_IO;
        }
    }
out:
    curl_slist_free_all(headers);
    if (c)
        curl_easy_cleanup(c);
    free(url);
    free(payload);
    sb_free(&answer);
    return st;
}
