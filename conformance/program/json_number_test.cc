// Tests of exact JSON numbers (json_number.h): shortest forms, non-finite strings, bitwise round trips.
#include "conformance/program/json_number.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "conformance/program/json_reader.h"

namespace lockstep {
namespace {

using nlohmann::ordered_json;

uint64_t bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Through text, as a file would carry it.
double through_text(const ordered_json& j) {
  return number_from_json(ordered_json::parse(j.dump()), "/x");
}

TEST(JsonNumber, ShortestForms) {
  EXPECT_EQ(number_to_json(0.1).dump(), "0.1");
  EXPECT_EQ(float_number_to_json(0.1f).dump(), "0.1");  // not 0.10000000149011612
  EXPECT_EQ(number_to_json(static_cast<double>(0.1f)).dump(), "0.10000000149011612");
  EXPECT_EQ(float_number_to_json(1.0f / 3.0f).dump(), "0.33333334");
  EXPECT_EQ(number_to_json(-0.0).dump(), "-0.0");
  EXPECT_EQ(float_number_to_json(-0.0).dump(), "-0.0");
  EXPECT_EQ(number_to_json(2.0).dump(), "2.0");
  EXPECT_EQ(values_to_json({0.1f, 2.5}, DType::Float32).dump(), "[0.1,2.5]");
  // A value that is not a float is kept whole rather than rounded.
  EXPECT_EQ(float_number_to_json(0.1).dump(), "0.1");
  EXPECT_EQ(bits(through_text(float_number_to_json(0.1))), bits(0.1));
}

TEST(JsonNumber, NonFiniteAsStrings) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(number_to_json(std::nan("")).dump(), "\"NaN\"");
  EXPECT_EQ(number_to_json(inf).dump(), "\"Infinity\"");
  EXPECT_EQ(number_to_json(-inf).dump(), "\"-Infinity\"");
  EXPECT_EQ(float_number_to_json(-inf).dump(), "\"-Infinity\"");
  EXPECT_TRUE(std::isnan(number_from_json("NaN", "")));
  EXPECT_EQ(number_from_json("Infinity", ""), inf);
  EXPECT_EQ(number_from_json("-Infinity", ""), -inf);
}

TEST(JsonNumber, ReadingRejectsOtherValuesWithThePointer) {
  try {
    number_from_json("nan", "/params/0/values/2");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.pointer(), "/params/0/values/2");
    EXPECT_NE(std::string(e.what()).find("\"nan\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(number_from_json(true, "/a"), JsonError);
  EXPECT_THROW(number_from_json(nullptr, "/a"), JsonError);
  EXPECT_THROW(values_from_json(ordered_json::object(), "/v", DType::Float64), JsonError);
  try {
    values_from_json(ordered_json::parse("[1, [2]]"), "/v", DType::Float64);
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.pointer(), "/v/1");
  }
}

TEST(JsonNumber, Float32ValuesAreRoundedWhenRead) {
  auto v = values_from_json(ordered_json::parse("[0.1, 1e300]"), "", DType::Float32);
  EXPECT_EQ(bits(v[0]), bits(static_cast<double>(0.1f)));
  EXPECT_TRUE(std::isinf(v[1]));
  auto d = values_from_json(ordered_json::parse("[0.1, 3]"), "", DType::Float64);
  EXPECT_EQ(bits(d[0]), bits(0.1));
  EXPECT_EQ(d[1], 3.0);
}

TEST(JsonNumber, DoublesRoundTripBitwise) {
  std::vector<double> special = {0.0, -0.0, 0.1, 1.0 / 3, 1e-310, -4.9e-324, std::numeric_limits<double>::min(),
                                 std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(),
                                 9007199254740993.0, 1e22, 123456789012345680.0};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint64_t b = rng();
    double v;
    std::memcpy(&v, &b, sizeof v);
    if (std::isfinite(v)) special.push_back(v);
  }
  for (double v : special) ASSERT_EQ(bits(through_text(number_to_json(v))), bits(v)) << v;
}

TEST(JsonNumber, FloatsRoundTripBitwiseIncludingDenormals) {
  std::vector<float> special = {0.1f, -0.0f, 0.0f, 1e-45f, -1e-45f, 1.17549435e-38f, 1.1754942e-38f,
                                3.4028235e38f, 16777216.0f, 16777218.0f, 0.3f, 1.0f / 3.0f};
  std::mt19937 rng(11);
  for (int i = 0; i < 300000; ++i) {
    uint32_t b = rng();
    float f;
    std::memcpy(&f, &b, sizeof f);
    if (std::isfinite(f)) special.push_back(f);
  }
  for (float f : special) {
    const double back = through_text(float_number_to_json(f));
    ASSERT_EQ(bits(static_cast<float>(back)), bits(f)) << f;
    // What a float32 tensor reads back is the float itself, exactly.
    ASSERT_EQ(bits(values_from_json(ordered_json::parse(values_to_json({f}, DType::Float32).dump()), "",
                                    DType::Float32)[0]),
              bits(static_cast<double>(f)));
  }
}

}  // namespace
}  // namespace lockstep
