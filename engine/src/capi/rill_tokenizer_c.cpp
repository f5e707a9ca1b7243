// C API: tokenizers (rill/tokenizer.hpp).
#include <cstring>
#include <optional>
#include <string>

#include "capi_common.hpp"
#include "rill/tokenizer.hpp"

struct rill_tokenizer {
  rill::lm::Tokenizer tokenizer;
};

struct rill_text_stream {
  rill::lm::TextStream stream;
  std::string ready;  // pushed text not yet read
  // The last pushed piece until the next call settles it into `ready`: once the stream has taken a
  // token, keeping its text must not need memory (a piece can be long: a user-defined piece, or
  // the text of many held-back tokens).
  std::optional<std::string> pending;
  // Moves the pending piece onto `ready`; out of host memory, both stay as they were.
  void settle() {
    if (!pending) return;
    ready.reserve(ready.size() + pending->size());
    ready += *pending;
    pending.reset();
  }
};

using rill::capi::dead;
using rill::capi::destroy_handle;
using rill::capi::fail;
using rill::capi::from_status;
using rill::capi::guarded;
using rill::capi::make_handle;

rill_status rill_tokenizer_load(const char* path, rill_tokenizer** out) {
  return guarded("rill_tokenizer_load", [&]() -> rill_status {
    if (out == nullptr) return fail(RILL_INVALID_ARGUMENT, "rill_tokenizer_load: out is NULL");
    *out = nullptr;
    if (path == nullptr) {
      *out = make_handle(new rill_tokenizer{rill::lm::Tokenizer::bytes()});
      return RILL_OK;
    }
    auto t = rill::lm::Tokenizer::load_sentencepiece(path);
    if (!t.is_ok()) return from_status(t.status());
    *out = make_handle(new rill_tokenizer{std::move(t).value()});
    return RILL_OK;
  });
}

void rill_tokenizer_destroy(rill_tokenizer* tokenizer) { destroy_handle(tokenizer); }

rill_status rill_tokenizer_encode(const rill_tokenizer* tokenizer, const char* text, size_t length, int add_bos,
                                  uint32_t* tokens_out, size_t capacity, size_t* count_out) {
  return guarded("rill_tokenizer_encode", [&]() -> rill_status {
    if (dead(tokenizer) || count_out == nullptr || (text == nullptr && length > 0) ||
        (tokens_out == nullptr && capacity > 0))
      return fail(RILL_INVALID_ARGUMENT, "rill_tokenizer_encode: NULL argument or destroyed handle");
    auto tokens = tokenizer->tokenizer.encode(std::string_view(text ? text : "", length), add_bos != 0);
    if (!tokens.is_ok()) return from_status(tokens.status());
    *count_out = tokens->size();
    if (tokens->size() > capacity)
      return fail(RILL_OUT_OF_RANGE, "rill_tokenizer_encode: " + std::to_string(tokens->size()) +
                                         " tokens, room for " + std::to_string(capacity));
    if (!tokens->empty()) std::memcpy(tokens_out, tokens->data(), tokens->size() * sizeof(uint32_t));
    return RILL_OK;
  });
}

rill_status rill_tokenizer_decode(const rill_tokenizer* tokenizer, const uint32_t* tokens, size_t count, char* text_out,
                                  size_t capacity, size_t* length_out) {
  return guarded("rill_tokenizer_decode", [&]() -> rill_status {
    if (dead(tokenizer) || length_out == nullptr || (tokens == nullptr && count > 0) ||
        (text_out == nullptr && capacity > 0))
      return fail(RILL_INVALID_ARGUMENT, "rill_tokenizer_decode: NULL argument or destroyed handle");
    auto text = tokenizer->tokenizer.decode(std::span<const uint32_t>(tokens, count));
    if (!text.is_ok()) return from_status(text.status());
    *length_out = text->size();
    if (text->size() > capacity)
      return fail(RILL_OUT_OF_RANGE, "rill_tokenizer_decode: " + std::to_string(text->size()) + " bytes, room for " +
                                         std::to_string(capacity));
    if (!text->empty()) std::memcpy(text_out, text->data(), text->size());
    return RILL_OK;
  });
}

rill_status rill_tokenizer_info(const rill_tokenizer* tokenizer, uint32_t* vocab_out, int64_t* bos_out,
                                int64_t* eos_out) {
  if (dead(tokenizer)) return fail(RILL_INVALID_ARGUMENT, "rill_tokenizer_info: tokenizer is NULL or destroyed");
  const auto& t = tokenizer->tokenizer;
  if (vocab_out) *vocab_out = t.vocab_size();
  if (bos_out) *bos_out = t.bos() ? int64_t(*t.bos()) : -1;
  if (eos_out) *eos_out = t.eos() ? int64_t(*t.eos()) : -1;
  return RILL_OK;
}

rill_status rill_text_stream_create(const rill_tokenizer* tokenizer, rill_text_stream** out) {
  return guarded("rill_text_stream_create", [&]() -> rill_status {
    if (out == nullptr) return fail(RILL_INVALID_ARGUMENT, "rill_text_stream_create: out is NULL");
    *out = nullptr;
    if (dead(tokenizer)) return fail(RILL_INVALID_ARGUMENT, "rill_text_stream_create: tokenizer is NULL or destroyed");
    *out = make_handle(new rill_text_stream{rill::lm::TextStream(tokenizer->tokenizer), {}});
    return RILL_OK;
  });
}

void rill_text_stream_destroy(rill_text_stream* stream) { destroy_handle(stream); }

rill_status rill_text_stream_push(rill_text_stream* stream, uint32_t token) {
  return guarded("rill_text_stream_push", [&]() -> rill_status {
    if (dead(stream)) return fail(RILL_INVALID_ARGUMENT, "rill_text_stream_push: stream is NULL or destroyed");
    // Room first: once push has taken the token, keeping its text must not fail for want of memory.
    stream->settle();
    auto piece = stream->stream.push(token);
    if (!piece.is_ok()) return from_status(piece.status());
    stream->pending.emplace(std::move(piece).value());  // a string's move: cannot throw
    return RILL_OK;
  });
}

rill_status rill_text_stream_finish(rill_text_stream* stream) {
  return guarded("rill_text_stream_finish", [&]() -> rill_status {
    if (dead(stream)) return fail(RILL_INVALID_ARGUMENT, "rill_text_stream_finish: stream is NULL or destroyed");
    // Placed before the stream forgets it: out of host memory, the held-back text stays held back.
    stream->settle();
    auto held = stream->stream.held_back();
    if (!held.is_ok()) return from_status(held.status());
    const std::string tail = std::move(held).value();
    stream->ready.reserve(stream->ready.size() + tail.size());
    stream->ready += tail;
    stream->stream.restart();
    return RILL_OK;
  });
}

rill_status rill_text_stream_read(rill_text_stream* stream, char* text_out, size_t capacity, size_t* length_out) {
  return guarded("rill_text_stream_read", [&]() -> rill_status {
    if (dead(stream) || length_out == nullptr || (text_out == nullptr && capacity > 0))
      return fail(RILL_INVALID_ARGUMENT, "rill_text_stream_read: NULL argument or destroyed handle");
    stream->settle();
    *length_out = stream->ready.size();
    if (stream->ready.size() > capacity)
      return fail(RILL_OUT_OF_RANGE, "rill_text_stream_read: " + std::to_string(stream->ready.size()) +
                                         " bytes, room for " + std::to_string(capacity));
    if (!stream->ready.empty()) std::memcpy(text_out, stream->ready.data(), stream->ready.size());
    stream->ready.clear();
    return RILL_OK;
  });
}
