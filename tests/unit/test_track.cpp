// `dsgd-bench track`'s closed sets (results/track.hpp): annotation kinds round-trip through
// their stored text and an unknown one is refused naming the known kinds; verdicts print as
// the gate documents them. The gate itself runs end to end in tests/integration/track.sh.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "results/track.hpp"

namespace dsgd {
namespace {

TEST(Track, AnnotationKindsRoundTripAndUnknownIsRefused) {
  for (AnnotationKind k :
       {AnnotationKind::annotation_expected, AnnotationKind::annotation_invalid, AnnotationKind::annotation_outlier})
    EXPECT_EQ(annotation_kind_parse(annotation_kind_text(k)), k);
  try {
    annotation_kind_parse("regression");
    FAIL() << "an unknown kind must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown annotation kind 'regression'"), std::string::npos);
    EXPECT_NE(std::string(e.hint()).find("expected, invalid, outlier"), std::string::npos);
  }
}

TEST(Track, VerdictTexts) {
  EXPECT_STREQ(track_verdict_text(TrackVerdict::track_regressed), "REGRESSED");
  EXPECT_STREQ(track_verdict_text(TrackVerdict::track_inconclusive), "inconclusive");
  EXPECT_STREQ(track_verdict_text(TrackVerdict::track_acknowledged), "acknowledged");
  EXPECT_STREQ(track_verdict_text(TrackVerdict::track_too_short), "too short");
}

}  // namespace
}  // namespace dsgd
