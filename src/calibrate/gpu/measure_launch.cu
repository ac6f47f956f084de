// Kernel-launch and CUDA-graph replay overhead, with a tiny kernel that
// counts its own runs (the count is checked: a launch that silently did not
// run would otherwise look very fast).
#include <chrono>

#include "calibrate/gpu/gpu_common.cuh"
#include "calibrate/gpu/measurements.h"

namespace agentperf::calibrate::gpu {
namespace {

__global__ void tick(unsigned long long* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1ull);
}

}  // namespace

void measure_launch(const Context& ctx, JsonWriter& out) {
  ctx.say("launch and graph-replay overhead");
  Stream stream;
  DeviceBuffer<unsigned long long> counter(1);
  AP_CUDA(cudaMemset(counter.get(), 0, sizeof(unsigned long long)));
  unsigned long long expected = 0;
  const int repeats = ctx.quick ? 5 : 15;

  // Back-to-back launches: the rate the CPU can issue kernels (eager mode).
  const int burst = 5000;
  const double eager = time_median_per_call(stream.get(), 200, repeats, burst, [&] {
    tick<<<1, 32, 0, stream.get()>>>(counter.get());
  });
  expected += 200 + std::uint64_t(repeats) * burst;

  ctx.say("launch: launch + sync round trips");
  // One launch then a wait: the round trip a dependent launch pays.
  std::vector<double> sync_samples;
  for (int i = 0; i < 300; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    tick<<<1, 32, 0, stream.get()>>>(counter.get());
    AP_CUDA(cudaStreamSynchronize(stream.get()));
    sync_samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  expected += 300;

  ctx.say("launch: graph replay");
  // A graph of many nodes: the cost of each node on replay.
  auto build_graph = [&](int nodes) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    AP_CUDA(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nodes; ++i) tick<<<1, 32, 0, stream.get()>>>(counter.get());
    AP_CUDA(cudaStreamEndCapture(stream.get(), &graph));
    AP_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    AP_CUDA(cudaGraphDestroy(graph));
    return exec;
  };
  const int nodes = 1000;
  cudaGraphExec_t big = build_graph(nodes);
  const double per_big = time_median_per_call(stream.get(), 2, repeats, 5, [&] { AP_CUDA(cudaGraphLaunch(big, stream.get())); });
  expected += std::uint64_t(2 + repeats * 5) * nodes;
  cudaGraphExec_t one = build_graph(1);
  const double per_one = time_median_per_call(stream.get(), 20, repeats, 500, [&] { AP_CUDA(cudaGraphLaunch(one, stream.get())); });
  expected += 20 + std::uint64_t(repeats) * 500;
  AP_CUDA(cudaStreamSynchronize(stream.get()));
  AP_CUDA(cudaGraphExecDestroy(big));
  AP_CUDA(cudaGraphExecDestroy(one));

  unsigned long long got = 0;
  AP_CUDA(cudaMemcpy(&got, counter.get(), sizeof got, cudaMemcpyDeviceToHost));
  if (got != expected)
    throw std::runtime_error("launch test: kernels ran " + std::to_string(got) + " times, expected " + std::to_string(expected));
  out.begin_object("launch")
      .field("eager_launch_s", eager)
      .field("launch_and_sync_s", median(sync_samples))
      .field("graph_nodes", nodes)
      .field("graph_node_s", (per_big - per_one) / (nodes - 1))
      .field("graph_launch_s", per_one)
      .end_object();
}

}  // namespace agentperf::calibrate::gpu
