#include "engine_session/clock_reference.h"

#include <cmath>
#include <sstream>

#include "error/error.h"
#include "transport/clock_probe.h"

namespace dyno::engine_session {

namespace {

record::ClockMeasurement measurement(const transport::ClockMeasurement& m) {
  return record::ClockMeasurement{m.best.offset_ns, m.best.uncertainty_ns, m.best.rtt_ns, m.samples,
                                  m.probes,         m.at_unix_ns};
}

}  // namespace

record::ClockReference clock_reference_before(const std::string& address) {
  const transport::ClockMeasurement m = transport::measure_clock(address, "--clock-ref");
  const std::int64_t offset = m.best.offset_ns;
  if (offset > kMaxClockOffsetNs || offset < -kMaxClockOffsetNs) {
    const double days = static_cast<double>(offset) / 86'400e9;
    std::ostringstream text;
    text.precision(4);
    text << "--clock-ref " << address << ": this host's wall clock is " << std::fabs(days)
         << " days " << (offset > 0 ? "ahead of" : "behind") << " reference " << m.reference_id
         << " (offset " << offset << " ns); an offset over one day is a clock that is set "
         << "wrong, not one that drifted: set this host's clock (or the reference's) and run "
            "again";
    throw Error(ErrorKind::input, text.str());
  }
  record::ClockReference r;
  r.address = address;
  r.id = m.reference_id;
  r.before = measurement(m);
  return r;
}

void clock_reference_after(record::ClockReference& r) {
  try {
    const transport::ClockMeasurement m = transport::measure_clock(r.address, "--clock-ref");
    if (m.reference_id != r.id) {
      r.after_error = "another reference answered after the load (id " + m.reference_id +
                      ", before it " + r.id + "): was it restarted?";
      return;
    }
    r.after = measurement(m);
  } catch (const Error& e) {
    r.after_error = e.what();
  }
}

}  // namespace dyno::engine_session
