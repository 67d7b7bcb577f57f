// kvtopo._kvtopo, worker part: each rank's BlockTable, slot mapping and rank-local lengths, all
// asked of a group's GroupGeometry (never derived here from raw integers).
#include <pybind11/stl.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "binding_util.h"
#include "kvtopo/block_table.h"
#include "kvtopo/geometry.h"
#include "kvtopo/limits.h"
#include "kvtopo/slot_mapping.h"

namespace kvtopo::python {
namespace {

// A GroupGeometry reaches Python only from a plan or a layout (ComputeGroupGeometry); the one a
// default-constructed object would hold has no blocks and maps nothing.
void RequireGeometry(const GroupGeometry& g) {
  if (g.block_size() <= 0) {
    RaisePython(PyExc_ValueError, "the group geometry is empty; use one from a plan or a layout");
  }
}

Rank CheckedRank(const GroupGeometry& g, int64_t rank) {
  RequireGeometry(g);
  if (rank < 0 || rank >= g.dcp_size()) {
    RaisePython(PyExc_ValueError, "rank must be in [0, " + std::to_string(g.dcp_size()) +
                                      ") (the DCP size), got " + std::to_string(rank));
  }
  return Rank{static_cast<int32_t>(rank)};
}

// A group's geometry: a GroupGeometry, or anything with a .geometry (a plan's Group).
GroupGeometry GeometryOf(py::handle group) {
  if (py::isinstance<GroupGeometry>(group)) return group.cast<GroupGeometry>();
  if (!py::hasattr(group, "geometry")) {
    RaisePython(PyExc_TypeError,
                "expected a GroupGeometry or a plan's Group, got " + TypeName(group));
  }
  return group.attr("geometry").cast<GroupGeometry>();
}

// Positions as a copy. Reading them may run Python code (an iterable's __iter__) that changes a
// block table or releases a buffer, so callers read them before they take any span of a row.
std::vector<TokenPos> PositionsIn(py::handle positions_obj) {
  std::vector<int64_t> scratch;
  const IntsIn<int64_t> raw(positions_obj, "positions", scratch);
  std::vector<TokenPos> positions;
  positions.reserve(raw.values().size());
  for (int64_t p : raw.values()) {
    if (p < 0) {
      RaisePython(PyExc_ValueError, "positions must be non-negative, got " + std::to_string(p));
    }
    positions.emplace_back(p);
  }
  return positions;
}

// The slots' buffer: num_slots entries (default: one per position), all padding.
std::vector<int64_t> SlotBuffer(size_t num_positions, std::optional<int64_t> num_slots) {
  const int64_t size = num_slots.value_or(static_cast<int64_t>(num_positions));
  if (size < static_cast<int64_t>(num_positions) || size > kMaxTableEntries) {
    RaisePython(PyExc_ValueError, "num_slots must be in [len(positions), " +
                                      std::to_string(kMaxTableEntries) + "], got " +
                                      std::to_string(size));
  }
  return std::vector<int64_t>(static_cast<size_t>(size), kPadSlot);
}

// The rank's layout for a layer whose cache keeps one row per `compress_ratio` positions, with
// the positions at or past `max_model_len` (a draft step's) as padding.
SlotLayout LayoutFor(const GroupGeometry& g, int64_t rank, int64_t compress_ratio,
                     std::optional<int64_t> max_model_len) {
  SlotLayout layout = g.SlotLayoutFor(CheckedRank(g, rank));
  layout.compress_ratio = compress_ratio;
  if (max_model_len) {
    if (*max_model_len < 1) {
      RaisePython(PyExc_ValueError,
                  "max_model_len must be positive, got " + std::to_string(*max_model_len));
    }
    layout.pad_from = *max_model_len;
  }
  return layout;
}

py::object SlotMapping(const GroupGeometry& g, int64_t rank, std::span<const int32_t> kernel_row,
                       std::span<const TokenPos> positions, std::optional<int64_t> num_slots,
                       int64_t compress_ratio, std::optional<int64_t> max_model_len) {
  const SlotLayout layout = LayoutFor(g, rank, compress_ratio, max_model_len);
  std::vector<int64_t> out = SlotBuffer(positions.size(), num_slots);
  ThrowIfError(ComputeSlotMapping(layout, kernel_row, positions, out));
  return ToMemoryView(std::move(out));
}

struct PyBlockTable {
  PyBlockTable(py::handle group, int64_t num_rows)
      : geometry(GeometryOf(group)), table(Checked(geometry, num_rows)) {}

  static BlockTable Checked(const GroupGeometry& g, int64_t num_rows) {
    if (num_rows < 1 || num_rows > std::numeric_limits<int32_t>::max()) {
      RaisePython(PyExc_ValueError,
                  "num_rows must be in [1, 2^31), got " + std::to_string(num_rows));
    }
    RequireGeometry(g);
    // rows x width int32 entries are allocated now: bounded (kvtopo/limits.h).
    if (num_rows > kMaxTableEntries / std::max<int64_t>(g.block_table_width(), 1)) {
      RaisePython(PyExc_ValueError,
                  "num_rows " + std::to_string(num_rows) + " x block_table_width " +
                      std::to_string(g.block_table_width()) + " is more than the " +
                      std::to_string(kMaxTableEntries) + " entries a table may hold");
    }
    return BlockTable(g, static_cast<int32_t>(num_rows));
  }

  int32_t Row(int64_t row) const {
    if (row < 0 || row >= table.num_rows()) {
      RaisePython(PyExc_IndexError, "row " + std::to_string(row) + " out of range [0, " +
                                        std::to_string(table.num_rows()) + ")");
    }
    return static_cast<int32_t>(row);
  }

  std::vector<BlockId> Blocks(py::handle block_ids) const {
    const int64_t k = table.kernel_blocks_per_block();
    std::vector<int64_t> scratch;
    std::vector<BlockId> out;
    for (int64_t b : IntsIn<int64_t>(block_ids, "block_ids", scratch).values()) {
      // Kernel ids b * k .. b * k + k - 1 must fit int32 (written without overflowing).
      if (b < 0 || b > (std::numeric_limits<int32_t>::max() - (k - 1)) / k) {
        RaisePython(PyExc_ValueError, "block id " + std::to_string(b) +
                                          " is negative or its kernel blocks overflow int32");
      }
      out.emplace_back(static_cast<int32_t>(b));
    }
    return out;
  }

  // The block ids are read first: reading them may run Python code (an iterable's __iter__) that
  // changes this table, and the row's checks must see the table as the write finds it.
  void Append(int64_t row, py::handle block_ids) {
    const std::vector<BlockId> blocks = Blocks(block_ids);
    ThrowIfError(table.Append(Row(row), blocks));
  }
  void WriteFrom(int64_t row, int64_t first_column, py::handle block_ids) {
    const std::vector<BlockId> blocks = Blocks(block_ids);
    const int32_t r = Row(row);
    const int64_t length_columns = table.row_length(r) / table.kernel_blocks_per_block();
    if (first_column < 0 || first_column > length_columns) {
      RaisePython(PyExc_ValueError,
                  "first_column must be in [0, " + std::to_string(length_columns) +
                      "] (a write may not leave a gap), got " + std::to_string(first_column));
    }
    ThrowIfError(table.WriteFrom(r, first_column, blocks));
  }
  void AddRow(int64_t row, py::handle block_ids) {
    const std::vector<BlockId> blocks = Blocks(block_ids);
    ThrowIfError(table.AddRow(Row(row), blocks));
  }
  void ClearRow(int64_t row) { table.ClearRow(Row(row)); }
  void MoveRow(int64_t src, int64_t dst) { table.MoveRow(Row(src), Row(dst)); }
  void SwapRow(int64_t a, int64_t b) { table.SwapRow(Row(a), Row(b)); }
  int64_t RowLength(int64_t row) const { return table.row_length(Row(row)); }
  py::object Slots(int64_t row, int64_t rank, py::handle positions,
                   std::optional<int64_t> num_slots, int64_t compress_ratio,
                   std::optional<int64_t> max_model_len) const {
    const std::vector<TokenPos> read = PositionsIn(positions);
    const int32_t r = Row(row);
    return SlotMapping(geometry, rank, table.Row(r).first(table.row_length(r)), read, num_slots,
                       compress_ratio, max_model_len);
  }

  // The whole batch's slots in one call, request i on row i (compute_slot_mapping).
  py::object BatchSlots(int64_t rank, py::handle query_start_loc, py::handle positions,
                        std::optional<int64_t> num_slots, int64_t compress_ratio,
                        std::optional<int64_t> max_model_len) const {
    // Positions first (copied): reading the offsets runs no Python code after them.
    const std::vector<TokenPos> read = PositionsIn(positions);
    std::vector<int64_t> scratch;
    const IntsIn<int64_t> starts(query_start_loc, "query_start_loc", scratch);
    const SlotLayout layout = LayoutFor(geometry, rank, compress_ratio, max_model_len);
    std::vector<int64_t> out = SlotBuffer(read.size(), num_slots);
    ThrowIfError(ComputeBatchSlotMapping(layout, table, starts.values(), read, out));
    return ToMemoryView(std::move(out));
  }

  GroupGeometry geometry;
  BlockTable table;
};

}  // namespace

void BindWorker(py::module_& m) {
  using T = PyBlockTable;
  py::class_<T>(m, "BlockTable", py::buffer_protocol(),
                "One rank's block table for one group: num_rows x block_table_width int32 kernel "
                "block ids. memoryview(table) is a read-only 2-D view.")
      .def(py::init<py::handle, int64_t>(), py::arg("group"), py::arg("num_rows"),
           "A table for a GroupGeometry or a plan's Group.")
      .def_buffer([](T& t) {
        const auto width = static_cast<py::ssize_t>(t.table.width());
        return py::buffer_info(const_cast<int32_t*>(t.table.Row(0).data()), sizeof(int32_t), "i", 2,
                               {static_cast<py::ssize_t>(t.table.num_rows()), width},
                               {width * py::ssize_t{4}, py::ssize_t{4}}, /*readonly=*/true);
      })
      .def_readonly("geometry", &T::geometry)
      .def_property_readonly("num_rows", [](const T& t) { return t.table.num_rows(); })
      .def_property_readonly("width", [](const T& t) { return t.table.width(); })
      .def_property_readonly("kernel_blocks_per_block",
                             [](const T& t) { return t.table.kernel_blocks_per_block(); })
      .def("append", &T::Append, py::arg("row"), py::arg("block_ids"),
           "Appends manager block ids to the row.")
      .def("write_from", &T::WriteFrom, py::arg("row"), py::arg("first_column"),
           py::arg("block_ids"),
           "Writes manager block ids from a manager column (see KVCacheManager.last_update).")
      .def("add_row", &T::AddRow, py::arg("row"), py::arg("block_ids"),
           "Replaces the row with these manager block ids (a new request taking the row, the "
           "engine worker's add_row); a row they would not fit raises and is left as it was.")
      .def("clear_row", &T::ClearRow, py::arg("row"))
      .def(
          "clear", [](T& t) { t.table.Clear(); }, "Clears every row.")
      .def("move_row", &T::MoveRow, py::arg("src"), py::arg("dst"),
           "Copies row src to row dst (entries past src's length become 0); src is unchanged.")
      .def("swap_row", &T::SwapRow, py::arg("a"), py::arg("b"), "Exchanges two rows.")
      .def("row_length", &T::RowLength, py::arg("row"), "Kernel entries in use in the row.")
      .def(
          "row",
          [](py::object self, int64_t row) {
            const T& t = self.cast<const T&>();
            const std::span<const int32_t> data = t.table.Row(t.Row(row));
            return View(self, data.data(), data.size(), "i");
          },
          py::arg("row"), "The row's kernel block ids, full width, as a read-only memoryview.")
      .def("slot_mapping", &T::Slots, py::arg("row"), py::arg("rank"), py::arg("positions"),
           py::arg("num_slots") = py::none(), py::kw_only(), py::arg("compress_ratio") = 1,
           py::arg("max_model_len") = py::none(),
           "Slots (int64 memoryview) of the row's positions on `rank`; -1 where the rank does "
           "not hold the position, and for padding up to num_slots. compress_ratio: a layer "
           "keeping one row per that many positions (a plan layer's compress_ratio, DeepSeek-V4's "
           "compressed caches): only positions p with (p + 1) % compress_ratio == 0 get a slot. "
           "max_model_len: positions at or past it get -1 without a block id (a speculative "
           "draft step's, as the engine's EAGLE proposer pads them).")
      .def("compute_slot_mapping", &T::BatchSlots, py::arg("rank"), py::arg("query_start_loc"),
           py::arg("positions"), py::arg("num_slots") = py::none(), py::kw_only(),
           py::arg("compress_ratio") = 1, py::arg("max_model_len") = py::none(),
           "The batch's slots (int64 memoryview) on `rank`, request i on row i: its tokens are "
           "positions[query_start_loc[i]:query_start_loc[i + 1]]; -1 where the rank does not "
           "hold a position, past the last request's tokens and up to num_slots (the engine "
           "worker's compute_slot_mapping; with compress_ratio, its "
           "get_compressed_slot_mapping); with max_model_len, -1 at positions at or past it "
           "(a speculative draft step's, which the engine's EAGLE proposer pads).")
      .def("check_invariants", [](const T& t) { t.table.CheckInvariants(); });

  m.def(
      "slot_mapping",
      [](const GroupGeometry& g, int64_t rank, py::handle kernel_row, py::handle positions,
         std::optional<int64_t> num_slots, int64_t compress_ratio,
         std::optional<int64_t> max_model_len) {
        // Positions first (copied): reading the row may be in place, with no Python code after.
        const std::vector<TokenPos> read = PositionsIn(positions);
        std::vector<int32_t> scratch;
        const IntsIn<int32_t> row(kernel_row, "kernel_row", scratch);
        for (size_t i = 0; i < row.values().size(); ++i) {
          if (row.values()[i] < 0) {
            RaisePython(PyExc_ValueError, "kernel_row[" + std::to_string(i) + "] is " +
                                              std::to_string(row.values()[i]) +
                                              "; kernel block ids are non-negative");
          }
        }
        return SlotMapping(g, rank, row.values(), read, num_slots, compress_ratio, max_model_len);
      },
      py::arg("geometry"), py::arg("rank"), py::arg("kernel_row"), py::arg("positions"),
      py::arg("num_slots") = py::none(), py::kw_only(), py::arg("compress_ratio") = 1,
      py::arg("max_model_len") = py::none(),
      "Slots (int64 memoryview) of `positions` on `rank` for a request whose kernel block "
      "row is `kernel_row` (only its used entries); -1 where the rank does not hold a "
      "position, with compress_ratio (a layer keeping one row per that many positions) "
      "where p + 1 is not a multiple of it, and with max_model_len at positions at or past "
      "it (a speculative draft step's).");
  m.def(
      "holds_position",
      [](const GroupGeometry& g, int64_t rank, int64_t position) {
        if (position < 0) {
          RaisePython(PyExc_ValueError,
                      "position must be non-negative, got " + std::to_string(position));
        }
        return g.HoldsPosition(CheckedRank(g, rank), TokenPos{position});
      },
      py::arg("geometry"), py::arg("rank"), py::arg("position"),
      "Whether `rank` holds `position` of the group.");
  m.def(
      "local_seq_len",
      [](const GroupGeometry& g, int64_t rank, int64_t seq_len) {
        if (seq_len < 0) {
          RaisePython(PyExc_ValueError,
                      "seq_len must be non-negative, got " + std::to_string(seq_len));
        }
        return g.LocalLength(CheckedRank(g, rank), TokenCount{seq_len}).value();
      },
      py::arg("geometry"), py::arg("rank"), py::arg("seq_len"),
      "Tokens of a seq_len-token sequence the group keeps on `rank`.");
  m.def(
      "local_seq_lens",
      [](const GroupGeometry& g, int64_t rank, py::handle seq_lens,
         std::optional<int64_t> num_rows) {
        const Rank r = CheckedRank(g, rank);
        std::vector<int32_t> scratch;
        const IntsIn<int32_t> lens(seq_lens, "seq_lens", scratch);
        for (size_t i = 0; i < lens.values().size(); ++i) {
          if (lens.values()[i] < 0) {
            RaisePython(PyExc_ValueError, "seq_lens[" + std::to_string(i) + "] is " +
                                              std::to_string(lens.values()[i]) +
                                              "; lengths are non-negative");
          }
        }
        const int64_t n = static_cast<int64_t>(lens.values().size());
        const int64_t rows = num_rows.value_or(n);
        if (rows < n || rows > kMaxTableEntries) {
          RaisePython(PyExc_ValueError, "num_rows must be in [len(seq_lens), " +
                                            std::to_string(kMaxTableEntries) + "], got " +
                                            std::to_string(rows));
        }
        std::vector<int32_t> out(rows, 0);
        g.LocalLengths(r, lens.values(), out);
        return ToMemoryView(std::move(out));
      },
      py::arg("geometry"), py::arg("rank"), py::arg("seq_lens"), py::arg("num_rows") = py::none(),
      "Rank-local lengths (int32 memoryview) of the group's sequences for attention metadata; "
      "a draft passes its own group's geometry and its own global lengths; rows past "
      "len(seq_lens) are 0.");
  RefuseUninitialized<T>("BlockTable(...)");
  RefuseSecondInit<T>(m.attr("BlockTable"));
}

}  // namespace kvtopo::python
