#include "plugin/preferred_allocation.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace vfio_gpu::plugin {

std::string NumaKey(const DeviceInfo& d) {
  return d.numa_node ? std::to_string(*d.numa_node) : std::string("none");
}

std::string SwitchKey(const DeviceInfo& d) {
  // Below the root port, the first bridge is a switch's upstream port: units sharing the root port
  // and that bridge sit under one switch. Units directly under a root port share nothing.
  if (d.pcie_path.size() >= 2) return d.pcie_path[0] + "/" + d.pcie_path[1];
  return "unit:" + d.id;
}

namespace {

struct Candidate {
  const DeviceInfo* info;
  std::string numa, sw, rc;
};

// Lower is better, compared lexicographically.
using Cost = std::tuple<size_t, size_t, size_t, int, int, std::vector<std::string>>;

class Chooser {
 public:
  Chooser(std::vector<Candidate> fixed, std::vector<Candidate> pool)
      : fixed_(std::move(fixed)), pool_(std::move(pool)) {
    for (const auto& c : pool_) {
      ++free_numa_[c.numa];
      ++free_switch_[c.sw];
    }
  }

  std::vector<std::string> Choose(size_t want) {
    if (want == 0 || pool_.empty()) return {};
    want = std::min(want, pool_.size());
    std::optional<Cost> best_cost;
    std::vector<size_t> best;
    // One greedy growth per seed (every candidate, or just the fixed set when there is one), each
    // scored as a whole: cheap (n^2 * want) and deterministic.
    std::vector<std::optional<size_t>> seeds;
    if (!fixed_.empty()) seeds.push_back(std::nullopt);
    for (size_t i = 0; i < pool_.size(); ++i) seeds.push_back(i);
    for (const auto& seed : seeds) {
      std::vector<size_t> chosen;
      std::vector<bool> used(pool_.size(), false);
      if (seed) {
        chosen.push_back(*seed);
        used[*seed] = true;
      }
      while (chosen.size() < want) {
        std::optional<size_t> pick;
        std::tuple<int, int, int, int, std::string> pick_key;
        for (size_t i = 0; i < pool_.size(); ++i) {
          if (used[i]) continue;
          auto key = StepKey(chosen, i);
          if (!pick || key < pick_key) {
            pick = i;
            pick_key = key;
          }
        }
        chosen.push_back(*pick);
        used[*pick] = true;
      }
      Cost cost = SetCost(chosen);
      if (!best_cost || cost < *best_cost) {
        best_cost = cost;
        best = chosen;
      }
    }
    std::vector<std::string> out;
    for (size_t i : best) out.push_back(pool_[i].info->id);
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  template <typename F>
  bool InSet(const std::vector<size_t>& chosen, F same) const {
    for (const auto& f : fixed_)
      if (same(f)) return true;
    for (size_t j : chosen)
      if (same(pool_[j])) return true;
    return false;
  }

  // How far candidate i is from what is chosen so far.
  std::tuple<int, int, int, int, std::string> StepKey(const std::vector<size_t>& chosen,
                                                      size_t i) const {
    const auto& c = pool_[i];
    bool empty = fixed_.empty() && chosen.empty();
    int numa = empty || InSet(chosen, [&](const Candidate& o) { return o.numa == c.numa; }) ? 0 : 1;
    int sw = empty || InSet(chosen, [&](const Candidate& o) { return o.sw == c.sw; }) ? 0 : 1;
    int rc = empty || InSet(chosen, [&](const Candidate& o) { return o.rc == c.rc; }) ? 0 : 1;
    return {numa, sw, rc, free_switch_.at(c.sw), c.info->id};
  }

  Cost SetCost(const std::vector<size_t>& chosen) const {
    std::set<std::string> numas, switches, rcs;
    auto add = [&](const Candidate& c) {
      numas.insert(c.numa);
      switches.insert(c.sw);
      rcs.insert(c.rc);
    };
    for (const auto& f : fixed_) add(f);
    std::set<std::string> touched_numa, touched_switch;
    std::vector<std::string> ids;
    for (size_t j : chosen) {
      add(pool_[j]);
      touched_numa.insert(pool_[j].numa);
      touched_switch.insert(pool_[j].sw);
      ids.push_back(pool_[j].info->id);
    }
    std::sort(ids.begin(), ids.end());
    // Best fit: the fewer free units the touched domains had, the less we fragment big ones.
    int numa_fit = 0, switch_fit = 0;
    for (const auto& n : touched_numa) numa_fit += free_numa_.at(n);
    for (const auto& s : touched_switch) switch_fit += free_switch_.at(s);
    return {numas.size(), switches.size(), rcs.size(), numa_fit, switch_fit, ids};
  }

  std::vector<Candidate> fixed_;
  std::vector<Candidate> pool_;
  std::map<std::string, int> free_numa_;
  std::map<std::string, int> free_switch_;
};

Candidate MakeCandidate(const DeviceInfo& d) {
  return {&d, NumaKey(d), SwitchKey(d), d.root_complex.empty() ? "rc:" + d.id : d.root_complex};
}

}  // namespace

std::vector<std::string> PreferredAllocation(const ResourceDevices& devices,
                                             const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size) {
  std::vector<std::string> out;
  std::set<std::string> taken;
  std::vector<Candidate> fixed;
  for (const auto& id : must_include) {
    if (!taken.insert(id).second) continue;
    out.push_back(id);
    if (auto it = devices.find(id); it != devices.end()) fixed.push_back(MakeCandidate(it->second));
  }
  if (size <= static_cast<int>(out.size())) return out;

  std::vector<Candidate> pool;
  std::set<std::string> seen;
  for (const auto& id : available) {
    if (taken.count(id) || !seen.insert(id).second) continue;
    auto it = devices.find(id);
    if (it == devices.end() || !it->second.healthy) continue;
    pool.push_back(MakeCandidate(it->second));
  }
  std::sort(pool.begin(), pool.end(),
            [](const Candidate& a, const Candidate& b) { return a.info->id < b.info->id; });
  Chooser chooser(std::move(fixed), std::move(pool));
  for (auto& id : chooser.Choose(static_cast<size_t>(size) - out.size()))
    out.push_back(std::move(id));
  return out;
}

}  // namespace vfio_gpu::plugin
