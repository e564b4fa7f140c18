#include <dfgnn/detail/messages.hpp>
#include <dfgnn/message.hpp>

#include <algorithm>
#include <cctype>

namespace dfgnn {

namespace {

constexpr BinaryOp kBinaryOps[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Dot};

/// One of the operators, not another integer cast to BinaryOp.
bool named(BinaryOp op) { return std::find(std::begin(kBinaryOps), std::end(kBinaryOps), op) != std::end(kBinaryOps); }

}  // namespace

const char* to_string(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Dot: return "dot";
  }
  return "?";
}

const char* to_string(Reduce r) {
  switch (r) {
    case Reduce::Sum: return "sum";
    case Reduce::Mean: return "mean";
    case Reduce::Max: return "max";
    case Reduce::Min: return "min";
  }
  return "?";
}

std::string to_string(const Message& m) {
  const char* side = m.lhs == Target::E ? "e" : "u";
  if (m.is_copy()) return std::string("copy_") + side;
  return std::string(side) + "_" + to_string(m.op) + "_" + (m.rhs == Target::E ? "e" : m.rhs == Target::V ? "v" : "?");
}

BinaryOp parse_binary_op(const std::string& text) {
  const std::string s = lower(text);
  for (BinaryOp op : kBinaryOps)
    if (s == to_string(op)) return op;
  throw Error("unknown operator '" + text + "' (expected add, sub, mul, div or dot)");
}

Reduce parse_reduce(const std::string& text) {
  const std::string s = lower(text);
  for (Reduce r : {Reduce::Sum, Reduce::Mean, Reduce::Max, Reduce::Min})
    if (s == to_string(r)) return r;
  throw Error("unknown reduce '" + text + "' (expected sum, mean, max or min)");
}

Message parse_message(const std::string& text) {
  const std::string s = lower(text);
  if (s == "copy_u") return Message::copy_u();
  if (s == "copy_e") return Message::copy_e();
  for (BinaryOp op : kBinaryOps) {
    if (op == BinaryOp::Dot) continue;
    if (s == to_string(Message::u_op_e(op))) return Message::u_op_e(op);
    if (s == to_string(Message::u_op_v(op))) return Message::u_op_v(op);
  }
  throw Error("unknown message '" + text + "' (expected copy_u, copy_e, u_OP_e or u_OP_v with OP add, sub, mul or div)");
}

namespace detail {

namespace {

std::string shape_of(const Extents& t) {
  return "[" + std::to_string(t.rows) + "," + std::to_string(t.heads) + "," + std::to_string(t.dim) + "]";
}

[[noreturn]] void fail(const char* who, const std::string& what) { throw Error(std::string(who) + ": " + what); }

/// t is present, [rows, heads, dim] with heads in {1, H} and dim in {1, D} when `broadcast`
/// (else exactly H and D), and has data unless it is empty.
void expect(const char* who, const Extents& t, std::size_t rows, const char* rows_name, std::size_t H,
            std::size_t D, bool broadcast) {
  const auto fits = [&](std::size_t got, std::size_t want) { return got == want || (broadcast && got == 1); };
  const std::string want = std::string("[") + rows_name + (broadcast ? ",1|H,1|D]" : ",H,D]") + " with " + rows_name +
                           " = " + std::to_string(rows) + ", H = " + std::to_string(H) + ", D = " + std::to_string(D);
  if (!t.present()) fail(who, std::string(t.name) + " is missing, expected " + want);
  if (t.rows != rows || !fits(t.heads, H) || !fits(t.dim, D))
    fail(who, std::string(t.name) + " has shape " + shape_of(t) + ", expected " + want);
  if (!t.data && t.bytes() > 0) fail(who, std::string(t.name) + " has shape " + shape_of(t) + " but no data");
}

/// out's (H, D): both at least 1, data unless empty.
void expect_output(const char* who, const Extents& out, std::size_t rows, const char* rows_name) {
  if (!out.present() || out.rows != rows || out.heads < 1 || out.dim < 1)
    fail(who, std::string(out.name) + " has shape " + shape_of(out) + ", expected [" + rows_name + ",H,D] with " +
                  rows_name + " = " + std::to_string(rows) + " and H, D >= 1");
  // The CUDA kernels' per-row byte stride H*D*4 and width H*D are 32-bit (message_passing.cuh).
  // (With rows = N < 2^31 the bytes of out then stay below 2^62.)
  if (checked_product(std::string(who) + ": " + out.name + " H x D", {out.heads, out.dim}) > (std::uint64_t(1) << 29) - 1)
    fail(who, std::string(out.name) + " has shape " + shape_of(out) + ": H x D exceeds 2^29 - 1 features per row");
  if (!out.data && out.bytes() > 0) fail(who, std::string(out.name) + " has shape " + shape_of(out) + " but no data");
}

void check_message(const char* who, const Message& m) {
  const bool ok = (m.lhs == Target::U && (m.rhs == Target::None || m.rhs == Target::E || m.rhs == Target::V)) ||
                  (m.lhs == Target::E && m.rhs == Target::None);
  if (!ok) fail(who, "the message must be copy_u, copy_e, u_OP_e or u_OP_v");
  if (!m.is_copy() && (m.op == BinaryOp::Dot || !named(m.op))) fail(who, "a message takes add, sub, mul or div");
}

std::size_t rows_of(Target t, node_t N, edge_t E) { return t == Target::E ? std::size_t(E) : std::size_t(N); }
const char* rows_name(Target t) { return t == Target::E ? "E" : "N"; }

bool is_extreme(Reduce r) { return r == Reduce::Max || r == Reduce::Min; }

/// The message's operands: lhs always, rhs unless the message is a copy (then it must be absent).
void expect_operands(const char* who, node_t N, edge_t E, const Message& m, const Extents& lhs, const Extents& rhs,
                     std::size_t H, std::size_t D) {
  expect(who, lhs, rows_of(m.lhs, N, E), rows_name(m.lhs), H, D, true);
  if (m.is_copy()) {
    if (rhs.present()) fail(who, std::string(rhs.name) + " is given but " + to_string(m) + " takes one operand");
  } else {
    expect(who, rhs, rows_of(m.rhs, N, E), rows_name(m.rhs), H, D, true);
  }
}

/// A present gradient has its operand's extents.
void expect_like(const char* who, const Extents& grad, const Extents& of) {
  if (!grad.present()) return;
  if (!of.present()) fail(who, std::string(grad.name) + " is given but there is no " + of.name);
  if (grad.rows != of.rows || grad.heads != of.heads || grad.dim != of.dim)
    fail(who, std::string(grad.name) + " has shape " + shape_of(grad) + ", expected the shape of " + of.name + " " +
                  shape_of(of));
  if (!grad.data && grad.bytes() > 0) fail(who, std::string(grad.name) + " has shape " + shape_of(grad) + " but no data");
}

void check_op(const char* who, BinaryOp op) {
  if (!named(op)) fail(who, "unknown operator");
}

void check_reduce(const char* who, Reduce r) {
  if (r != Reduce::Sum && r != Reduce::Mean && !is_extreme(r)) fail(who, "unknown reduce");
}

// The x and y of a g-SDDMM whose output is [E,H,out_dim]; returns D.
std::size_t expect_sddmm_inputs(const char* who, node_t N, BinaryOp op, const Extents& x, const Extents& y,
                                std::size_t H, std::size_t out_dim, const char* out_name) {
  std::size_t D = out_dim;
  if (op == BinaryOp::Dot) {
    if (out_dim != 1) fail(who, std::string(out_name) + " of dot must be [E,H,1], got dim " + std::to_string(out_dim));
    D = std::max(x.dim, y.dim);
    if (D == 0) D = 1;  // both missing: expect() below names them
  }
  expect(who, x, std::size_t(N), "N", H, D, true);
  expect(who, y, std::size_t(N), "N", H, D, true);
  return D;
}

}  // namespace

void check_edge_rows(const char* who, edge_t edges) {
  if (edges >= (edge_t(1) << 32))
    fail(who, std::to_string(edges) + " edges: the CUDA message-passing kernels index edge rows in 32 bits (fewer "
                                      "than 2^32 edges); the portable backend takes any count");
}

void check_disjoint(const char* who, std::initializer_list<Extents> written, std::initializer_list<Extents> read) {
  auto overlap = [](const Extents& a, const Extents& b) {
    const char *p = static_cast<const char*>(a.data), *q = static_cast<const char*>(b.data);
    return p && q && p < q + b.bytes() && q < p + a.bytes();
  };
  for (auto w = written.begin(); w != written.end(); ++w) {
    for (const Extents& r : read)
      if (overlap(*w, r)) fail(who, std::string(w->name) + " overlaps " + r.name);
    for (auto o = w + 1; o != written.end(); ++o)
      if (overlap(*w, *o)) fail(who, std::string(w->name) + " overlaps " + o->name);
  }
}

void check_gspmm(const char* who, node_t N, edge_t E, const Message& m, Reduce r, const Extents& lhs,
                 const Extents& rhs, const Extents& out, const Extents& arg) {
  check_message(who, m);
  check_reduce(who, r);
  expect_output(who, out, std::size_t(N), "N");
  expect_operands(who, N, E, m, lhs, rhs, out.heads, out.dim);
  if (arg.present()) {
    if (!is_extreme(r)) fail(who, std::string(arg.name) + " is given but only max and min have arguments");
    expect(who, arg, std::size_t(N), "N", out.heads, out.dim, false);
  }
  check_disjoint(who, {out, arg}, {lhs, rhs});
}

void check_gspmm_backward(const char* who, node_t N, edge_t E, const Message& m, Reduce r, const Extents& lhs,
                          const Extents& rhs, const Extents& arg, const Extents& dout, const Extents& dlhs,
                          const Extents& drhs) {
  check_message(who, m);
  check_reduce(who, r);
  expect_output(who, dout, std::size_t(N), "N");
  expect_operands(who, N, E, m, lhs, rhs, dout.heads, dout.dim);
  if (is_extreme(r))
    expect(who, arg, std::size_t(N), "N", dout.heads, dout.dim, false);
  else if (arg.present())
    fail(who, std::string(arg.name) + " is given but only max and min have arguments");
  expect_like(who, dlhs, lhs);
  expect_like(who, drhs, rhs);
  check_disjoint(who, {dlhs, drhs}, {lhs, rhs, arg, dout});
}

std::size_t check_gsddmm(const char* who, node_t N, edge_t E, BinaryOp op, const Extents& x, const Extents& y,
                         const Extents& out) {
  check_op(who, op);
  expect_output(who, out, std::size_t(E), "E");
  const std::size_t D = expect_sddmm_inputs(who, N, op, x, y, out.heads, out.dim, out.name);
  check_disjoint(who, {out}, {x, y});
  return D;
}

std::size_t check_gsddmm_backward(const char* who, node_t N, edge_t E, BinaryOp op, const Extents& x,
                                  const Extents& y, const Extents& dout, const Extents& dx, const Extents& dy) {
  check_op(who, op);
  expect_output(who, dout, std::size_t(E), "E");
  const std::size_t D = expect_sddmm_inputs(who, N, op, x, y, dout.heads, dout.dim, dout.name);
  expect_like(who, dx, x);
  expect_like(who, dy, y);
  check_disjoint(who, {dx, dy}, {x, y, dout});
  return D;
}

void check_node_map(const char* who, node_t N, const Extents& x, const Extents& out) {
  expect_output(who, out, std::size_t(N), "N");
  expect(who, x, std::size_t(N), "N", out.heads, out.dim, false);
  check_disjoint(who, {out}, {x});
}

void run(const char* who, const MessageExecutor& executor, const MessageCall& c) {
  const node_t N = executor.num_nodes();
  const edge_t E = executor.num_edges();
  switch (c.pass) {
    case MessagePass::Spmm: check_gspmm(who, N, E, c.message, c.reduce, c.lhs, c.rhs, c.out, c.arg); break;
    case MessagePass::SpmmBackward:
      check_gspmm_backward(who, N, E, c.message, c.reduce, c.lhs, c.rhs, c.arg, c.dout, c.dlhs, c.drhs);
      break;
    case MessagePass::Sddmm: check_gsddmm(who, N, E, c.op, c.lhs, c.rhs, c.out); break;
    case MessagePass::SddmmBackward: check_gsddmm_backward(who, N, E, c.op, c.lhs, c.rhs, c.dout, c.dlhs, c.drhs); break;
    case MessagePass::Gcn: check_node_map(who, N, c.lhs, c.out); break;
    case MessagePass::GcnBackward: check_node_map(who, N, c.dout, c.dlhs); break;
  }
  executor.run(c);
}

}  // namespace detail

}  // namespace dfgnn
