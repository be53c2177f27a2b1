// Caller memory for the binding's calls (yuebing_py.cc): Python objects and int addresses turned
// into the slices yb::Client moves bytes through, and batches split into the keys whose memory is
// usable and those answered with a code at once.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <string>
#include <vector>

#include "py_values.h"
#include "yuebing/client.h"

namespace yb::py_memory {

namespace py = pybind11;
using namespace yb::py_values;  // NOLINT: the binding's own value types

// INVALID_PARAMS, logged with why.
inline int Invalid(const std::string& message) {
  LogError(message);
  return kInvalidParams;
}

// An int address is used as it is (0 with a size is refused); a buffer object must hold `size`
// bytes. A wrong type raises TypeError.
inline Memory ToMemory(const py::object& buffer, uint64_t size, bool writable, const char* what) {
  Memory m;
  m.size = size;
  if (py::isinstance<py::int_>(buffer)) {
    m.ptr = reinterpret_cast<void*>(buffer.cast<uintptr_t>());
    if (!m.ptr && size > 0) m.code = Invalid(std::string(what) + ": null address");
    return m;
  }
  m.view.emplace(buffer, writable, what);
  if (size > m.view->size()) {
    m.code = Invalid(std::string(what) + ": size " + std::to_string(size) + " exceeds the buffer's " +
                     std::to_string(m.view->size()) + " bytes");
  }
  m.ptr = m.view->data();
  return m;
}

// Each key's memory as slices; a key whose memory cannot be used gets its code in `codes`.
inline std::vector<std::vector<yb::Slice>> ToSlices(const std::vector<std::vector<py::object>>& all_buffers,
                                                    const std::vector<std::vector<uint64_t>>& all_sizes,
                                                    bool writable, const char* what, std::vector<Memory>& keep,
                                                    std::vector<int>& codes) {
  std::vector<std::vector<yb::Slice>> out(all_buffers.size());
  codes.assign(all_buffers.size(), 0);
  size_t total = 0;
  for (const auto& b : all_buffers) total += b.size();
  keep.reserve(total);
  for (size_t i = 0; i < all_buffers.size(); ++i) {
    if (all_buffers[i].size() != all_sizes[i].size()) {
      codes[i] = Invalid(std::string(what) + ": buffers and sizes of key " + std::to_string(i) + " differ in length");
      continue;
    }
    for (size_t j = 0; j < all_buffers[i].size(); ++j) {
      keep.push_back(ToMemory(all_buffers[i][j], all_sizes[i][j], writable, what));
      if (keep.back().code != 0) codes[i] = keep.back().code;
      out[i].push_back({keep.back().ptr, all_sizes[i][j]});
    }
  }
  return out;
}

// The keys whose memory is usable go to the store together; the others answer their codes.
template <typename Out, typename Call>
std::vector<Out> Batched(const std::vector<std::string>& keys, const std::vector<std::vector<yb::Slice>>& slices,
                         const std::vector<int>& codes, Call call) {
  if (std::all_of(codes.begin(), codes.end(), [](int code) { return code == 0; })) {
    py::gil_scoped_release unlocked;
    return call(keys, slices);
  }
  std::vector<Out> out(keys.size());
  std::vector<size_t> go;
  std::vector<std::string> go_keys;
  std::vector<std::vector<yb::Slice>> go_slices;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (codes[i] != 0) {
      out[i] = codes[i];
    } else {
      go.push_back(i);
      go_keys.push_back(keys[i]);
      go_slices.push_back(slices[i]);
    }
  }
  if (go.empty()) return out;
  py::gil_scoped_release unlocked;
  std::vector<Out> res = call(go_keys, go_slices);
  for (size_t k = 0; k < go.size(); ++k) out[go[k]] = res[k];
  return out;
}

}  // namespace yb::py_memory
