// libFuzzer target: read_npy_f32. Invariants: as many elements as the shape says; written back
// and read again, the same array bit for bit; an Error's message names the file on one line.

#include "fuzz.hpp"

#include <cstring>

using namespace dfgnn;
using fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fuzz::TempFile file("array.npy"), copy("copy.npy");
  const std::string& path = fuzz::write(file, data, size);
  io::Array a;
  try {
    a = io::read_npy_f32(path);
  } catch (const Error& e) {
    fuzz::check_message(e, path + ": ");
    return 0;
  }
  std::uint64_t count = 1;
  for (const std::int64_t d : a.shape) {
    check(d >= 0, "negative dimension " + std::to_string(d));
    count *= std::uint64_t(d);  // the reader bounds the product
  }
  check(a.data.size() == count, "shape of " + std::to_string(count) + " elements, " + std::to_string(a.data.size()) + " read");
  try {
    io::write_npy_f32(copy.path, a.shape, a.data.data());
  } catch (const Error& e) {  // a format 2.0 header's many dimensions do not fit format 1.0's
    fuzz::check_message(e, copy.path + ": shape has too many dimensions");
    return 0;
  }
  const io::Array b = io::read_npy_f32(copy.path);
  check(b.shape == a.shape && b.data.size() == a.data.size() &&
            (a.data.empty() || std::memcmp(b.data.data(), a.data.data(), a.data.size() * sizeof(float)) == 0),
        "written and read back, the array changed");
  return 0;
}
