#include "record/llamacpp_timings.h"

#include <gtest/gtest.h>

namespace dyno::record {
namespace {

TEST(LlamaCppTimings, ReadsAResponsesTimings) {
  // A llama-server (b4748) non-streamed response's timings, with draft counts added.
  const auto t = parse_llamacpp_timings(
      R"({"cache_n":3,"prompt_n":13,"prompt_ms":4.507,"prompt_per_token_ms":0.3466923076923077,)"
      R"("prompt_per_second":2884.402041269137,"predicted_n":4,"predicted_ms":6.625,)"
      R"("predicted_per_token_ms":1.65625,"predicted_per_second":603.7735849056604,)"
      R"("draft_n":12,"draft_n_accepted":7})");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->cache_n, 3);
  EXPECT_EQ(t->prompt_n, 13);
  EXPECT_DOUBLE_EQ(*t->prompt_ms, 4.507);
  EXPECT_EQ(t->predicted_n, 4);
  EXPECT_DOUBLE_EQ(*t->predicted_ms, 6.625);
  EXPECT_EQ(t->draft_n, 12);
  EXPECT_EQ(t->draft_n_accepted, 7);
}

TEST(LlamaCppTimings, AbsentNullAndOddFieldsStayAbsent) {
  // Older servers send no cache_n and no drafts; a rate over zero time is null.
  auto t = parse_llamacpp_timings(
      R"({"prompt_n":1,"prompt_ms":1.406,"predicted_n":1,"predicted_ms":0.0,)"
      R"("predicted_per_second":null})");
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->cache_n);
  EXPECT_EQ(t->prompt_n, 1);
  EXPECT_DOUBLE_EQ(*t->predicted_ms, 0.0);
  EXPECT_FALSE(t->draft_n);
  EXPECT_FALSE(t->draft_n_accepted);

  t = parse_llamacpp_timings(
      R"({"prompt_n":"13","prompt_ms":-1,"predicted_n":2.5,"predicted_ms":null,"cache_n":4.0})");
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->prompt_n);      // a string
  EXPECT_FALSE(t->prompt_ms);     // negative
  EXPECT_FALSE(t->predicted_n);   // not an integer
  EXPECT_FALSE(t->predicted_ms);  // null
  EXPECT_EQ(t->cache_n, 4);       // an integral float reads as a count

  EXPECT_FALSE(parse_llamacpp_timings(""));
  EXPECT_FALSE(parse_llamacpp_timings("[1,2]"));
  EXPECT_FALSE(parse_llamacpp_timings("{not json"));
  EXPECT_TRUE(parse_llamacpp_timings("{}"));
}

}  // namespace
}  // namespace dyno::record
