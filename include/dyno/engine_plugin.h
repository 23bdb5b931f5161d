/*
 * dyno engine plugin ABI, version 1: an inference engine that runs inside dyno's process.
 *
 * A plugin is a shared library that exports one C function, DYNO_ENGINE_PLUGIN_ENTRY
 * ("dyno_engine_plugin_v1"), returning a table of function pointers. dyno loads it with
 * `dyno run --plugin lib.so --plugin-config STRING`, creates one engine instance for the whole
 * command, submits requests to it, and times the tokens the engine reports through callbacks
 * with the same traces, figures and run record as an HTTP engine. docs/plugins.md walks through
 * an implementation (src/sim/plugin.cpp, the simulated engine).
 *
 * This header is plain C99 (also valid C++); nothing but C types crosses it.
 *
 * --- Versioning -------------------------------------------------------------------------------
 * The entry symbol names the ABI version; a new incompatible ABI gets a new symbol
 * (dyno_engine_plugin_v2) and a new DYNO_ENGINE_PLUGIN_ABI_VERSION, so a plugin and a dyno that
 * disagree fail with a clear message instead of a crash. Within version 1, structs only grow at
 * their end, and every struct starts with `struct_size`, the size of the struct as its *writer*
 * compiled it. The reader uses DYNO_ENGINE_HAS_FIELD to see whether a field is present; a field
 * beyond struct_size is absent (treated as its zero/"unknown" value).
 *   - Structs dyno fills (request, callbacks, and the identity it asks describe() to fill) carry
 *     dyno's sizeof. Before describe(), dyno zeroes the identity and sets its struct_size; the
 *     plugin writes only the fields that fit.
 *   - Structs the plugin fills (the plugin table, events, ends) carry the plugin's sizeof.
 *
 * --- Clock ------------------------------------------------------------------------------------
 * Every time is CLOCK_MONOTONIC in nanoseconds (clock_gettime(CLOCK_MONOTONIC), the clock of
 * std::chrono::steady_clock on Linux and of every dyno timestamp). 0 means "the engine has no
 * time for this"; dyno then uses the time its callback ran. An engine time that cannot be right
 * (before the request was submitted, after dyno received the callback, or earlier than the
 * request's previous time) is not used either: dyno takes its receive time and counts the
 * rejection in the record (manifest.json -> clock.event_stamps).
 *
 * --- Threads ----------------------------------------------------------------------------------
 * dyno calls the functions of one engine instance from one thread at a time (not always the
 * same thread): create/describe/destroy on the command's main thread, submit/cancel/release on
 * the event-loop thread of the run. The engine may run any threads of its own.
 * Callbacks (on_event, on_end) may be called from any thread: an engine thread, or the thread
 * that is inside submit() or cancel() at the time (so a plugin may answer synchronously). For one
 * request the plugin must not overlap callbacks (call them one after the other, in order: zero
 * or more on_event, then exactly one on_end); callbacks of different requests may run at the same
 * time on different threads. dyno's callbacks are thread-safe, cheap (they copy the event into a
 * queue under a mutex and wake dyno's event loop), never block on I/O and never call back into
 * the plugin.
 *
 * --- Lifetime and ownership -------------------------------------------------------------------
 *   create:   `config` is valid during the call only. On failure, the plugin returns NULL and
 *             writes a NUL-terminated message (truncated to fit) into dyno's `error` buffer of
 *             `error_size` bytes. The returned engine belongs to the plugin; dyno hands it back
 *             to destroy() exactly once.
 *   describe: the strings the plugin writes into the identity are owned by the engine and must
 *             stay valid and unchanged until destroy().
 *   submit:   `request` and every string in it, `callbacks` (the struct) are valid during the
 *             call only: copy what you keep. `callbacks->user_data` stays valid until on_end has
 *             been called for this request, and must not be used afterwards. Returns a request
 *             handle owned by the plugin, or NULL when the engine refuses the request at once
 *             (then it writes the reason into `error`, and calls no callback for it). For a
 *             non-NULL handle exactly one on_end follows (possibly before submit returns).
 *   cancel:   asks the engine to stop the request. Idempotent; valid on any handle not yet
 *             released, including one whose on_end has already been called (then it does
 *             nothing). The engine still calls on_end exactly once (status
 *             DYNO_ENGINE_STATUS_CANCELLED, or OK/error if it ended first), and should do so
 *             promptly: dyno waits for it before releasing the handle.
 *   release:  dyno is done with the handle; called exactly once per non-NULL submit, after dyno
 *             has seen the request's on_end. It may run while the engine thread that called
 *             on_end is still returning from it, so the engine must not touch the handle's memory
 *             after calling on_end unless it holds a reference of its own (reference-count the
 *             request, or free it only in release).
 *   destroy:  called once, after every handle was released, or (when dyno gives up waiting
 *             for on_end of cancelled requests, or is interrupted) with requests still live: the
 *             engine then ends them without further callbacks. After destroy returns, no callback
 *             may run and no engine thread may remain. dyno unloads the library afterwards.
 *   callback arguments (events, ends and their strings) are valid during the call only.
 * Strings are UTF-8. `const char*` + `_len` pairs need not be NUL-terminated; plain `const char*`
 * fields are NUL-terminated. NULL with length 0 means empty.
 */
#ifndef DYNO_ENGINE_PLUGIN_H
#define DYNO_ENGINE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DYNO_ENGINE_PLUGIN_ABI_VERSION 1u
#define DYNO_ENGINE_PLUGIN_ENTRY "dyno_engine_plugin_v1"

/* Marks the entry point as exported (build plugins with -fvisibility=hidden). */
#if defined(__GNUC__)
#define DYNO_ENGINE_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define DYNO_ENGINE_PLUGIN_EXPORT
#endif

/* Whether `field` of the struct `*ptr` (of type `type`) lies within ptr->struct_size. */
#ifdef __cplusplus
#define DYNO_ENGINE_SIZEOF_FIELD(type, field) sizeof(type::field)
#else
#define DYNO_ENGINE_SIZEOF_FIELD(type, field) sizeof(((type*)0)->field)
#endif
#define DYNO_ENGINE_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + DYNO_ENGINE_SIZEOF_FIELD(type, field))

/* Opaque handles, defined by the plugin. */
typedef struct dyno_engine dyno_engine;
typedef struct dyno_engine_request_handle dyno_engine_request_handle;

/* dyno_engine_request.api */
#define DYNO_ENGINE_API_CHAT 0        /* messages_json holds the conversation */
#define DYNO_ENGINE_API_COMPLETIONS 1 /* prompt holds the text */

/* dyno_engine_request.has: which optional sampling fields are set (else: the engine's default) */
#define DYNO_ENGINE_HAS_MAX_TOKENS (1u << 0)
#define DYNO_ENGINE_HAS_TEMPERATURE (1u << 1)
#define DYNO_ENGINE_HAS_TOP_P (1u << 2)
#define DYNO_ENGINE_HAS_SEED (1u << 3)
#define DYNO_ENGINE_HAS_MIN_TOKENS (1u << 4)
#define DYNO_ENGINE_HAS_IGNORE_EOS (1u << 5)

/* One request. Filled by dyno; valid during submit() only. */
typedef struct dyno_engine_request {
  size_t struct_size;
  const char* request_id; /* "<run_id>-<submission>", unique within the run (join key for logs) */
  const char* model;      /* the model id dyno asks for */
  int32_t api;            /* DYNO_ENGINE_API_CHAT or DYNO_ENGINE_API_COMPLETIONS */
  int32_t stream;         /* 1: report tokens as they are made; 0: dyno will time the whole
                             answer as one event at its end (the engine may report it in one
                             event, or several: dyno joins them) */
  /* Chat: the OpenAI `messages` array as JSON text, e.g.
     [{"role":"user","content":"Hi"}]; content may be a string or an array of parts
     ({"type":"text","text":..} and {"type":"image_url","image_url":{"url":..}}). NULL for
     completions. */
  const char* messages_json;
  size_t messages_json_len;
  /* Completions: the prompt text. NULL for chat. */
  const char* prompt;
  size_t prompt_len;
  uint32_t has;            /* DYNO_ENGINE_HAS_* bits */
  int32_t ignore_eos;      /* 0 or 1, when DYNO_ENGINE_HAS_IGNORE_EOS */
  int64_t max_tokens;      /* >= 1, when DYNO_ENGINE_HAS_MAX_TOKENS */
  int64_t min_tokens;      /* >= 0, when DYNO_ENGINE_HAS_MIN_TOKENS */
  int64_t seed;            /* when DYNO_ENGINE_HAS_SEED */
  double temperature;      /* when DYNO_ENGINE_HAS_TEMPERATURE */
  double top_p;            /* when DYNO_ENGINE_HAS_TOP_P */
  const char* const* stop; /* stop strings (NUL-terminated), stop_count of them; may be NULL */
  size_t stop_count;
} dyno_engine_request;

/* Generated output, reported by the engine. Several tokens per event are fine (speculative
   decoding, or a batch the engine flushes at once): dyno times the event, not each token. */
typedef struct dyno_engine_event {
  size_t struct_size;
  int64_t t_ns;        /* when the engine produced these tokens (CLOCK_MONOTONIC); 0: none */
  const char* content; /* generated answer text of this event */
  size_t content_len;
  const char* reasoning; /* generated reasoning text ("thinking") of this event */
  size_t reasoning_len;
  int64_t tokens; /* tokens this event carries (>= 1), 0 when the engine cannot say */
} dyno_engine_event;

/* dyno_engine_end.status:
   OK         the answer is complete;
   REJECTED   refused before generating: bad or unsupported parameters, unknown model, prompt
              too long, no room;
   FAILED     failed while serving it (internal error, out of memory, ...);
   TIMEOUT    the engine's own deadline expired;
   CANCELLED  ended because dyno called cancel(). */
#define DYNO_ENGINE_STATUS_OK 0
#define DYNO_ENGINE_STATUS_REJECTED 1
#define DYNO_ENGINE_STATUS_FAILED 2
#define DYNO_ENGINE_STATUS_TIMEOUT 3
#define DYNO_ENGINE_STATUS_CANCELLED 4

/* The end of a request: exactly one per submitted request. Counts are -1 when unknown. */
typedef struct dyno_engine_end {
  size_t struct_size;
  int64_t t_ns;              /* when the request ended in the engine (CLOCK_MONOTONIC); 0: none */
  int32_t status;            /* DYNO_ENGINE_STATUS_* */
  int32_t reserved;          /* 0 */
  const char* finish_reason; /* OK: "stop", "length", ... (NUL-terminated); NULL if none */
  const char* error_message; /* status != OK: what happened (NUL-terminated); NULL if none */
  int64_t prompt_tokens;     /* prompt tokens as the engine counted them (chat template too) */
  int64_t completion_tokens; /* generated tokens; -1: dyno sums the events' `tokens` if every
                                event reported a count */
  int64_t cached_tokens;     /* prompt tokens served from a prefix cache */
  int64_t reasoning_tokens;  /* of completion_tokens, those that were reasoning */
} dyno_engine_end;

/* How the engine reports one request's progress. Filled by dyno; the struct is valid during
   submit() only (copy it), user_data until on_end has been called. */
typedef struct dyno_engine_callbacks {
  size_t struct_size;
  void* user_data;
  void (*on_event)(void* user_data, const dyno_engine_event* event);
  void (*on_end)(void* user_data, const dyno_engine_end* end);
} dyno_engine_callbacks;

/* What the engine says it is; recorded in manifest.json -> engine.identity. NULL: unknown. */
typedef struct dyno_engine_identity {
  size_t struct_size;            /* set by dyno (its sizeof); the plugin writes fields that fit */
  const char* engine_name;       /* e.g. "dyno-sim" */
  const char* engine_version;    /* e.g. "0.1.0" */
  const char* model_id;          /* the model it serves (dyno requests it when --model is absent) */
  const char* model_fingerprint; /* a digest identifying the weights, if the engine knows one */
  const char* args_json;         /* a JSON object of the engine's effective arguments */
} dyno_engine_identity;

/* The plugin's function table, returned by the entry point. Static storage in the plugin. */
typedef struct dyno_engine_plugin {
  uint32_t abi_version; /* DYNO_ENGINE_PLUGIN_ABI_VERSION the plugin was built against */
  uint32_t reserved;    /* 0 */
  size_t struct_size;   /* sizeof(dyno_engine_plugin) as the plugin was built */

  /* Creates an engine from the configuration string (the plugin's own syntax, documented by the
     plugin; dyno passes --plugin-config unchanged, "" when absent). May take long (loading
     weights). NULL on failure, with the reason in `error`. */
  dyno_engine* (*create)(const char* config, char* error, size_t error_size);
  /* Fills `identity` (zeroed by dyno, struct_size set). Returns 0, or nonzero on failure. */
  int (*describe)(dyno_engine* engine, dyno_engine_identity* identity);
  /* Starts one request and returns at once; see "Lifetime" above. */
  dyno_engine_request_handle* (*submit)(dyno_engine* engine, const dyno_engine_request* request,
                                        const dyno_engine_callbacks* callbacks, char* error,
                                        size_t error_size);
  /* Asks the engine to stop a request; idempotent. */
  void (*cancel)(dyno_engine* engine, dyno_engine_request_handle* request);
  /* dyno is done with a request handle (after its on_end). */
  void (*release)(dyno_engine* engine, dyno_engine_request_handle* request);
  /* Ends the engine: stops its threads, frees everything. */
  void (*destroy)(dyno_engine* engine);
} dyno_engine_plugin;

/* The one symbol a plugin exports. Returns the table (never NULL). */
typedef const dyno_engine_plugin* (*dyno_engine_plugin_entry_fn)(void);
DYNO_ENGINE_PLUGIN_EXPORT const dyno_engine_plugin* dyno_engine_plugin_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* DYNO_ENGINE_PLUGIN_H */
