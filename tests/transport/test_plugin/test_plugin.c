/* A tiny engine plugin for the PluginTarget tests, in C99: it proves that
 * include/dyno/engine_plugin.h is a C header, and answers synchronously (callbacks from inside
 * submit() and cancel(), on dyno's own thread), which the sim plugin never does.
 *
 * Config (comma-separated, all optional):
 *   tokens=N        token events per request (default 3), one token each, text " tN"
 *   stamps=engine   event/end times from CLOCK_MONOTONIC (default); none: 0; bogus: 1 ns
 *   end=ok|rejected|failed|timeout|cancelled   the end status (default ok)
 *   count=0         report completion_tokens as -1 (dyno then sums the events' tokens)
 *   refuse=1        submit() returns NULL with "refused by config"
 *   hang=1          submit() sends the events but no end; cancel() ends it (status cancelled)
 *   fail=1          create() fails with "fail=1 was asked for"
 * The model id is "test-model".
 *
 * Variants (compile definitions): TEST_PLUGIN_NO_ENTRY (no entry point: not a plugin),
 * TEST_PLUGIN_ABI=<n> (the table claims ABI n), TEST_PLUGIN_FUTURE (exports only
 * dyno_engine_plugin_v2). test_plugin_live_handles() counts handles not yet released.
 */
#define _POSIX_C_SOURCE 200809L

#include <dyno/engine_plugin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TEST_PLUGIN_ABI
#define TEST_PLUGIN_ABI DYNO_ENGINE_PLUGIN_ABI_VERSION
#endif

struct dyno_engine {
  int tokens;
  int stamps; /* 0 engine, 1 none, 2 bogus */
  int32_t end_status;
  int count;
  int refuse;
  int hang;
};

struct dyno_engine_request_handle {
  dyno_engine_callbacks callbacks;
  int ended;
  int64_t prompt_tokens;
  int64_t generated;
};

static int live_handles = 0;

DYNO_ENGINE_PLUGIN_EXPORT int test_plugin_live_handles(void) { return live_handles; }

static void write_error(char* error, size_t size, const char* message) {
  if (error != NULL && size > 0) snprintf(error, size, "%s", message);
}

static int64_t stamp(const dyno_engine* e) {
  struct timespec ts;
  if (e->stamps == 1) return 0;
  if (e->stamps == 2) return 1;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

static int option(const char* config, const char* key, char* value, size_t size) {
  const char* p = strstr(config, key);
  size_t n = 0;
  if (p == NULL || (p != config && p[-1] != ',')) return 0;
  p += strlen(key);
  while (p[n] != '\0' && p[n] != ',' && n + 1 < size) {
    value[n] = p[n];
    ++n;
  }
  value[n] = '\0';
  return 1;
}

static dyno_engine* create(const char* config, char* error, size_t error_size) {
  char v[64];
  dyno_engine* e;
  if (option(config, "fail=", v, sizeof v) && strcmp(v, "1") == 0) {
    write_error(error, error_size, "fail=1 was asked for");
    return NULL;
  }
  e = (dyno_engine*)calloc(1, sizeof *e);
  if (e == NULL) return NULL;
  e->tokens = 3;
  e->count = 1;
  if (option(config, "tokens=", v, sizeof v)) e->tokens = atoi(v);
  if (option(config, "stamps=", v, sizeof v)) {
    e->stamps = strcmp(v, "none") == 0 ? 1 : strcmp(v, "bogus") == 0 ? 2 : 0;
  }
  if (option(config, "end=", v, sizeof v)) {
    e->end_status = strcmp(v, "rejected") == 0    ? DYNO_ENGINE_STATUS_REJECTED
                    : strcmp(v, "failed") == 0    ? DYNO_ENGINE_STATUS_FAILED
                    : strcmp(v, "timeout") == 0   ? DYNO_ENGINE_STATUS_TIMEOUT
                    : strcmp(v, "cancelled") == 0 ? DYNO_ENGINE_STATUS_CANCELLED
                                                  : DYNO_ENGINE_STATUS_OK;
  }
  if (option(config, "count=", v, sizeof v)) e->count = atoi(v);
  if (option(config, "refuse=", v, sizeof v)) e->refuse = atoi(v);
  if (option(config, "hang=", v, sizeof v)) e->hang = atoi(v);
  return e;
}

static int describe(dyno_engine* engine, dyno_engine_identity* identity) {
  (void)engine;
  identity->engine_name = "test-engine";
  if (DYNO_ENGINE_HAS_FIELD(identity, dyno_engine_identity, model_id)) {
    identity->model_id = "test-model";
  }
  return 0;
}

static void end(dyno_engine* e, dyno_engine_request_handle* h, int32_t status) {
  dyno_engine_end done;
  memset(&done, 0, sizeof done);
  done.struct_size = sizeof done;
  done.t_ns = stamp(e);
  done.status = status;
  done.finish_reason = status == DYNO_ENGINE_STATUS_OK ? "length" : NULL;
  done.error_message = status == DYNO_ENGINE_STATUS_OK ? NULL : "test plugin says no";
  done.prompt_tokens = h->prompt_tokens;
  done.completion_tokens = e->count ? h->generated : -1;
  done.cached_tokens = -1;
  done.reasoning_tokens = -1;
  h->ended = 1;
  h->callbacks.on_end(h->callbacks.user_data, &done);
}

static dyno_engine_request_handle* submit(dyno_engine* e, const dyno_engine_request* request,
                                          const dyno_engine_callbacks* callbacks, char* error,
                                          size_t error_size) {
  dyno_engine_request_handle* h;
  int i;
  if (e->refuse) {
    write_error(error, error_size, "refused by config");
    return NULL;
  }
  if (strcmp(request->model, "test-model") != 0) {
    write_error(error, error_size, "unknown model");
    return NULL;
  }
  h = (dyno_engine_request_handle*)calloc(1, sizeof *h);
  if (h == NULL) return NULL;
  ++live_handles;
  h->callbacks = *callbacks;
  h->prompt_tokens = (int64_t)(request->api == DYNO_ENGINE_API_CHAT ? request->messages_json_len
                                                                    : request->prompt_len);
  for (i = 0; i < e->tokens; ++i) {
    char text[32];
    dyno_engine_event ev;
    snprintf(text, sizeof text, " t%d", i);
    memset(&ev, 0, sizeof ev);
    ev.struct_size = sizeof ev;
    ev.t_ns = stamp(e);
    ev.content = text;
    ev.content_len = strlen(text);
    ev.tokens = 1;
    ++h->generated;
    h->callbacks.on_event(h->callbacks.user_data, &ev);
  }
  if (!e->hang) end(e, h, e->end_status);
  return h;
}

static void cancel(dyno_engine* e, dyno_engine_request_handle* h) {
  if (!h->ended) end(e, h, DYNO_ENGINE_STATUS_CANCELLED);
}

static void release(dyno_engine* e, dyno_engine_request_handle* h) {
  (void)e;
  --live_handles;
  free(h);
}

static void destroy(dyno_engine* e) { free(e); }

static const dyno_engine_plugin table = {TEST_PLUGIN_ABI, 0,        sizeof(dyno_engine_plugin),
                                         create,          describe, submit,
                                         cancel,          release,  destroy};

#if defined(TEST_PLUGIN_NO_ENTRY)
DYNO_ENGINE_PLUGIN_EXPORT const dyno_engine_plugin* not_an_entry_point(void) { return &table; }
#elif defined(TEST_PLUGIN_FUTURE)
DYNO_ENGINE_PLUGIN_EXPORT const dyno_engine_plugin* dyno_engine_plugin_v2(void) { return &table; }
#else
const dyno_engine_plugin* dyno_engine_plugin_v1(void) { return &table; }
#endif
