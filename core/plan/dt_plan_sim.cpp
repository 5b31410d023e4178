// dt-plan-sim — the SimGrid (S4U) half of `dtctl plan` (docs/PLAN.md).
// C++ because S4U is; libdt stays C. dtctl writes a spec (key = value
// lines) and runs:
//   dt-plan-sim SPEC              the step-time table for N = 1..max
//   dt-plan-sim --ring N BYTES SPEC   one ring allreduce on N workers:
//                                 simulated and closed-form seconds
//   dt-plan-sim --order SPEC      the buckets in the order they are ready
//
// One training step as dt runs it: forward, backward layer by layer (the
// backward actor), each gradient bucket handed to the communication actor
// (a queue and a semaphore, as grad_sync's) when grad_sync would cut it, the last remainder
// reduced after backward on the main thread, then the optimizer, the
// data wait, and the loaders' next batch if it is not ready yet (`load`:
// they began it with the step). Workers are symmetric: one worker's compute is simulated, the
// network flows of all N are. A collective is a sequence of phases; a
// phase is every participant's message started at once (Comm::sendto_async
// between hosts, so links are shared as SimGrid's flow model shares them),
// then alpha (the transport's per-round software cost) and gamma x the
// bytes reduced. The ring's 2(N-1) steps are identical on a homogeneous
// platform (same neighbours every step): its first reduce-scatter and
// first allgather step are simulated and the others counted from them.
#include <simgrid/s4u.hpp>
#include <csignal>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "plan/plan_model.h" // the limits dtctl checks too

namespace sg4 = simgrid::s4u;

XBT_LOG_NEW_DEFAULT_CATEGORY(dt_plan, "dt-plan-sim");

struct Layer {
    double bwd;    // seconds of backward
    double bytes;  // gradient bytes (float32)
};

struct Spec {
    int hosts = 1, gpus = 1, max_workers = 0;
    double net_bw = 0, net_lat = 0, intra_bw = 0, intra_lat = 0;
    double alpha = 0, gamma = 0, alpha_intra = -1, gamma_intra = -1;
    double bucket = 25e6, small = 256 * 1024, ring = 0, hier = 512 * 1024;
    double forward = 0, optimizer = 0, data_wait = 0;
    // load: the loaders' seconds a batch (made while the step computes:
    // a step is at least that long); data_wait: added to every step.
    double load = 0;
    // wire: bytes on the wire per gradient byte (0.5: bf16/fp16
    // compression, the reduction still in float32); force_ring: the ring
    // at every size (Horovod's NCCL); cycle > 0: Horovod's fusion loop
    // instead of grad_sync's buckets (every cycle seconds, the ready
    // tensors up to `fusion` bytes in one allreduce).
    double wire = 1, force_ring = 0, cycle = 0, fusion = 64.0 * (1 << 20);
    // shm = 0: [collectives] shm = off, no shared segment (every
    // collective over the transport, no hierarchy)
    double shm = 1;
    int batch = 64;
    std::string platform;
    std::string topology; // "" (one switch) or "fat-tree:..." (docs/PLAN.md)
    std::vector<Layer> layers; // model order
    // compute_factor = N F: the step's compute (forward, each layer's
    // backward, the optimizer) times F at N workers: co-located workers
    // slowing each other and the slowest of N setting the pace (dtctl
    // plan --colocation); 1 for an N not listed
    std::map<int, double> compute_factor;
};

// The row printed so far stays; the message says why the rest is not.
static void die(const std::string& m)
{
    std::fflush(stdout);
    std::fprintf(stderr, "dt-plan-sim: %s\n", m.c_str());
    std::exit(2);
}

// From inside an actor: no exit handlers run on a simulated stack.
[[noreturn]] static void die_now(const std::string& m)
{
    std::fflush(stdout);
    std::fprintf(stderr, "dt-plan-sim: %s\n", m.c_str());
    std::fflush(stderr);
    std::_Exit(2);
}

// The range a spec's number takes (docs/PLAN.md's limits): "" if x is
// in it, else what it should be. Rates of 0 mean "the platform's".
static std::string spec_range(const std::string& k, double x)
{
    if (k == "network_bw" || k == "intra_bw")
        return x == 0 || (x >= DT_PLAN_RATE_MIN && x <= DT_PLAN_RATE_MAX)
                   ? ""
                   : "bytes/s, " DT_PLAN_RATE_RANGE " (0.125 to 1.25e15)";
    if (k == "network_latency" || k == "intra_latency" || k == "alpha" ||
        k == "alpha_intra")
        return x <= DT_PLAN_LATENCY_MAX ? "" : "seconds, at most 1";
    if (k == "gamma" || k == "gamma_intra")
        return x <= 1 / DT_PLAN_RATE_MIN ? "" : "seconds a byte, at most 8";
    if (k == "forward" || k == "optimizer" || k == "data_wait" || k == "load")
        return x <= DT_PLAN_SECONDS_MAX ? "" : "seconds, at most 1e9";
    bool count = k == "hosts" || k == "gpus_per_host" || k == "max_workers" ||
                 k == "batch";
    if (count && (x != std::floor(x) || x > 1e8))
        return "a whole number up to 1e8";
    return "";
}

static void set_count(Spec& s, const std::string& k, double x)
{
    int v = (int)x;
    if (k == "hosts")
        s.hosts = v;
    else if (k == "gpus_per_host")
        s.gpus = v;
    else if (k == "max_workers")
        s.max_workers = v;
    else
        s.batch = v;
}

// key = NUMBER; false for a key it does not know.
static bool set_number(Spec& s, const std::string& k, double x)
{
    std::map<std::string, double*> d = {
        {"network_bw", &s.net_bw}, {"network_latency", &s.net_lat},
        {"intra_bw", &s.intra_bw}, {"intra_latency", &s.intra_lat},
        {"alpha", &s.alpha},       {"gamma", &s.gamma},
        {"alpha_intra", &s.alpha_intra}, {"gamma_intra", &s.gamma_intra},
        {"bucket", &s.bucket},     {"allreduce_small", &s.small},
        {"allreduce_ring", &s.ring}, {"hier_min", &s.hier},
        {"forward", &s.forward},   {"optimizer", &s.optimizer},
        {"data_wait", &s.data_wait}, {"load", &s.load},
        {"wire", &s.wire},
        {"force_ring", &s.force_ring}, {"cycle", &s.cycle},
        {"fusion", &s.fusion}, {"shm", &s.shm}};
    if (k == "hosts" || k == "gpus_per_host" || k == "max_workers" || k == "batch")
        set_count(s, k, x);
    else if (d.count(k))
        *d[k] = x;
    else
        return false;
    return true;
}

// One line of the spec; die naming it (at: "PATH:LINE").
static void spec_line(Spec& s, const std::string& at, const std::string& k,
                      const std::string& v)
{
    std::istringstream vs(v);
    if (k == "layer") {
        Layer l;
        if (!(vs >> l.bwd >> l.bytes) || !std::isfinite(l.bwd) || l.bwd < 0 ||
            l.bwd > DT_PLAN_SECONDS_MAX || !std::isfinite(l.bytes) || l.bytes < 0 ||
            l.bytes > DT_PLAN_BYTES_MAX)
            die(at + ": layer = SECONDS BYTES (seconds up to 1e9, bytes up to 1e15)");
        s.layers.push_back(l);
    } else if (k == "platform") {
        s.platform = v;
    } else if (k == "topology") {
        s.topology = v;
    } else if (k == "compute_factor") {
        int n;
        double f;
        if (!(vs >> n >> f) || n < 1 || !(f > 0) || f > 1e6)
            die(at + ": compute_factor = N FACTOR (N >= 1, FACTOR > 0, up to 1e6)");
        s.compute_factor[n] = f;
    } else {
        double x;
        std::string junk;
        if (!(vs >> x) || (vs >> junk) || !std::isfinite(x) || x < 0)
            die(at + ": " + k + ": not a finite, non-negative number");
        std::string want = spec_range(k, x);
        if (!want.empty())
            die(at + ": " + k + " = " + v + ": " + want);
        if (!set_number(s, k, x))
            die(at + ": unknown key " + k);
    }
}

static Spec read_spec(const char* path)
{
    std::ifstream in(path);
    if (!in)
        die(std::string("cannot read ") + path);
    Spec s;
    std::string line;
    int ln = 0;
    while (std::getline(in, line)) {
        ln++;
        if (line.empty() || line[0] == '#')
            continue;
        std::string at = std::string(path) + ":" + std::to_string(ln);
        auto eq = line.find('=');
        if (eq == std::string::npos)
            die(at + ": no '='");
        std::string k = line.substr(0, eq), v = line.substr(eq + 1);
        k.erase(k.find_last_not_of(" \t") + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        spec_line(s, at, k, v);
    }
    if (s.hosts < 1 || s.gpus < 1)
        die("hosts and gpus_per_host must be at least 1");
    if ((long long)s.hosts * s.gpus > DT_PLAN_WORKERS_MAX)
        die("hosts x gpus_per_host: at most " + std::to_string(DT_PLAN_WORKERS_MAX) +
            " workers");
    if (s.batch < 1)
        die("batch must be at least 1");
    if (s.platform.empty() && (s.net_bw <= 0 || s.intra_bw <= 0))
        die("network_bw and intra_bw must be positive");
    if (s.alpha_intra < 0)
        s.alpha_intra = s.alpha;
    if (s.gamma_intra < 0)
        s.gamma_intra = s.gamma;
    if (s.max_workers <= 0)
        s.max_workers = s.hosts * s.gpus;
    if (!(s.wire > 0) || s.wire > 1)
        die("wire must be in (0, 1]");
    if (s.cycle < 0 || !(s.fusion > 0))
        die("cycle must be >= 0 and fusion positive");
    return s;
}

// ---- the platform: hosts x GPUs, one switch or a fat tree ---------------
static std::vector<sg4::Host*> g_workers; // worker r: host r / G, GPU r % G
static Spec g;
static int g_n; // the step being simulated: N workers

// One host: with one GPU the worker is the host itself (its netpoint);
// with G GPUs a star zone of G hosts, each linked to the host's NIC (a
// router, the zone's gateway) by an intra link. The host's link to the
// network is its caller's. Returns (netpoint, gateway).
static std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*>
make_host(sg4::NetZone* parent, int h, std::vector<sg4::Host*>* gpus)
{
    std::string hn = "host" + std::to_string(h);
    if (g.gpus == 1) {
        auto* host = parent->create_host(hn + "-gpu0", 1e9);
        gpus->push_back(host);
        return {host->get_netpoint(), nullptr};
    }
    auto* z = sg4::create_star_zone(hn);
    z->set_parent(parent);
    auto* gw = z->create_router(hn + "-nic");
    z->add_route(gw, nullptr, nullptr, nullptr, {}, true);
    for (int k = 0; k < g.gpus; k++) {
        std::string gn = hn + "-gpu" + std::to_string(k);
        auto* host = z->create_host(gn, 1e9);
        auto* l = z->create_split_duplex_link(gn + "-bus", g.intra_bw)
                      ->set_latency(g.intra_lat / 2); // up + down: one intra hop
        l->seal();
        z->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                     {sg4::LinkInRoute(l, sg4::LinkInRoute::Direction::UP)}, true);
        gpus->push_back(host);
    }
    z->seal();
    return {z->get_netpoint(), gw};
}

// "fat-tree:L[:R]": two levels, leaf switches of L hosts, each leaf with
// L/R up-links (R: the oversubscription, down:up) to as many spines,
// every spine linked to every leaf; or "fat-tree:LEVELS;DOWN;UP;COUNT",
// SimGrid's own description of any fat tree. Every link runs at the
// network rate with half the host-to-host latency (host, switch, host is
// two links, as on the one switch).
static sg4::FatTreeParams fat_tree_params(const std::string& t, int* leaves_total)
{
    std::string arg = t.substr(t.find(':') + 1);
    if (arg.find(';') != std::string::npos) { // LEVELS;DOWN,..;UP,..;COUNT,..
        std::vector<std::vector<unsigned>> part;
        std::istringstream in(arg);
        std::string field;
        while (std::getline(in, field, ';')) {
            std::vector<unsigned> v;
            std::istringstream fs(field);
            std::string num;
            while (std::getline(fs, num, ',')) {
                char* end = nullptr;
                unsigned long x = std::strtoul(num.c_str(), &end, 10);
                if (num.empty() || *end || x < 1 || x > 1u << 20)
                    die("--topology " + t + ": '" + num + "' is not a positive count");
                v.push_back((unsigned)x);
            }
            part.push_back(v);
        }
        if (part.size() != 4 || part[0].size() != 1 || part[1].size() != part[0][0] ||
            part[2].size() != part[0][0] || part[3].size() != part[0][0])
            die("--topology " + t + ": fat-tree:LEVELS;DOWN;UP;COUNT with LEVELS numbers in each "
                "of the last three (SimGrid's form, e.g. 2;4,4;1,2;1,2)");
        unsigned long n = 1;
        for (auto d : part[1])
            n = std::min(n * d, 1ul << 40);
        if (n > 1ul << 20) // every leaf is built, used or not
            die("--topology " + t + ": " + std::to_string(n) +
                " leaves; at most 1048576");
        *leaves_total = (int)n;
        return sg4::FatTreeParams(part[0][0], part[1], part[2], part[3]);
    }
    unsigned long L = 0, R = 1;
    char* end = nullptr;
    L = std::strtoul(arg.c_str(), &end, 10);
    bool ok = end != arg.c_str() && std::isdigit((unsigned char)arg[0]);
    if (ok && *end == ':') {
        const char* r = end + 1;
        R = std::strtoul(r, &end, 10);
        ok = end != r && std::isdigit((unsigned char)*r);
    }
    if (!ok || *end || L < 1 || L > 1u << 16 || R < 1 || L % R)
        die("--topology " + t + ": fat-tree:L[:R], L (1 to 65536) hosts per leaf switch, R "
            "(default 1) the oversubscription dividing L");
    unsigned leaves = (unsigned)((g.hosts + (long)L - 1) / (long)L);
    *leaves_total = (int)(L * leaves);
    return sg4::FatTreeParams(2, {(unsigned)L, leaves}, {1, (unsigned)(L / R)}, {1, 1});
}

static void build_fat_tree()
{
    int total = 0;
    auto params = fat_tree_params(g.topology, &total);
    if (total < g.hosts)
        die("--topology " + g.topology + " has " + std::to_string(total) + " hosts, " +
            std::to_string(g.hosts) + " asked");
    // The callback sees leaves in id order; hosts beyond --hosts (a
    // partly filled last leaf) stay empty: no worker runs there.
    std::vector<std::vector<sg4::Host*>> by_leaf(total);
    auto leaf = [&by_leaf](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
        return make_host(zone, (int)id, &by_leaf.at(id));
    };
    try {
        sg4::create_fatTree_zone("fat-tree", nullptr, params, sg4::ClusterCallbacks(leaf),
                                 g.net_bw, g.net_lat / 2, sg4::Link::SharingPolicy::SPLITDUPLEX)
            ->seal();
    } catch (const std::exception& ex) {
        die("--topology " + g.topology + ": " + ex.what());
    }
    for (int h = 0; h < g.hosts; h++)
        for (auto* w : by_leaf[h])
            g_workers.push_back(w);
}

// Every link of a platform file within the rates and latencies a plan
// takes: SimGrid aborts on a link of 0 bytes/s ("The Impossible Did
// Happen") and a step over a 1e-300 B/s link never ends.
static void check_links(sg4::Engine& e)
{
    for (auto* l : e.get_all_links()) {
        double bw = l->get_bandwidth(), lat = l->get_latency();
        std::ostringstream m;
        if (!(bw >= DT_PLAN_RATE_MIN && bw <= DT_PLAN_RATE_MAX))
            m << "bandwidth " << bw << " bytes/s: give it " DT_PLAN_RATE_RANGE
                 " (bandwidth=\"0.125Bps\" to \"1.25e15Bps\")";
        else if (!(lat >= 0 && lat <= DT_PLAN_LATENCY_MAX))
            m << "latency " << lat << " s: give it 0 to 1 s";
        if (!m.str().empty())
            die("platform " + g.platform + ": link '" + l->get_name() + "' has " + m.str());
    }
}

// The message of the route being looked up, for route_fault: a
// Dijkstra zone crashes in the lookup when a host has no link at all.
static std::string g_lookup;
static struct sigaction g_old_segv;

static void route_fault(int sig)
{
    if (g_lookup.empty()) { // not ours: SimGrid's handler, or the default
        sigaction(sig, &g_old_segv, nullptr);
        return;
    }
    ssize_t w = write(2, g_lookup.data(), g_lookup.size());
    (void)w;
    _exit(2);
}

static void catch_route_faults()
{
    struct sigaction sa = {};
    sa.sa_handler = route_fault;
    sa.sa_flags = SA_ONSTACK; // SimGrid's alternate stack, if any
    sigaction(SIGSEGV, &sa, &g_old_segv);
}

// A flow between hosts of a platform file with no route between them
// makes SimGrid abort (its message, a backtrace, the rows lost): each
// pair the plan uses is looked up the first time it is. Full zones
// return no links, Floyd zones throw, Dijkstra zones crash.
static void check_route(int a, int b)
{
    static std::unordered_set<uint64_t> seen;
    if (g.platform.empty() || !seen.insert((uint64_t)a << 32 | (uint32_t)b).second)
        return;
    std::string m = "platform " + g.platform + ": no route from host '" +
                    g_workers[a]->get_name() + "' (worker " + std::to_string(a) + ") to '" +
                    g_workers[b]->get_name() + "' (worker " + std::to_string(b) +
                    "), which the plan connects at N = " + std::to_string(g_n) +
                    ": add a <route> between them (or describe the hosts with a <cluster>)";
    std::vector<sg4::Link*> links;
    double lat = 0;
    g_lookup = "dt-plan-sim: " + m + "\n";
    try {
        g_workers[a]->route_to(g_workers[b], links, &lat);
    } catch (const std::exception&) {
        links.clear();
    }
    g_lookup.clear();
    if (links.empty() && !(lat > 0)) // SimGrid's own test for "no path"
        die_now(m);
}

// The file SimGrid reads: a directory or a device would get only flex's
// "input in flex scanner failed".
static void check_platform_file()
{
    struct stat st;
    if (stat(g.platform.c_str(), &st) != 0)
        die("platform " + g.platform + ": " + std::strerror(errno) +
            " (a SimGrid platform XML file)");
    if (!S_ISREG(st.st_mode))
        die("platform " + g.platform + ": not a regular file (a SimGrid platform XML file)");
}

static void build_platform(sg4::Engine& e)
{
    if (!g.platform.empty()) {
        check_platform_file();
        try {
            e.load_platform(g.platform);
        } catch (const std::exception& ex) {
            die("platform " + g.platform + ": " + ex.what());
        }
        check_links(e);
        catch_route_faults();
        auto hs = e.get_all_hosts();
        std::sort(hs.begin(), hs.end(),
                  [](sg4::Host* a, sg4::Host* b) { return a->get_name() < b->get_name(); });
        if ((int)hs.size() < g.max_workers)
            die("platform " + g.platform + " has " + std::to_string(hs.size()) +
                " hosts (one per GPU), " + std::to_string(g.max_workers) + " workers asked");
        g_workers.assign(hs.begin(), hs.begin() + g.max_workers);
        return;
    }
    if (!g.topology.empty()) {
        build_fat_tree();
    } else {
        auto* root = sg4::create_star_zone("switch");
        for (int h = 0; h < g.hosts; h++) {
            std::string hn = "host" + std::to_string(h);
            auto np = make_host(root, h, &g_workers);
            auto* nic = root->create_split_duplex_link(hn + "-link", g.net_bw)
                            ->set_latency(g.net_lat / 2); // host -> switch -> host
            nic->seal();
            root->add_route(np.first, nullptr, np.second, nullptr,
                            {sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::UP)}, true);
        }
        root->seal();
    }
    if ((int)g_workers.size() > g.max_workers)
        g_workers.resize(g.max_workers);
}

// ---- collectives as phases of point-to-point flows -------------------
struct Flow {
    int src, dst;
    double bytes;
};

static bool same_host(int a, int b) { return a / g.gpus == b / g.gpus; }

// Phases through the host's shared segment: float32 whatever the wire
// (dt compresses only what goes over the transport).
static bool g_seg;

// All flows at once; then alpha and gamma x reduced bytes (the slowest).
static double phase(const std::vector<Flow>& flows, double reduced)
{
    double t0 = sg4::Engine::get_clock();
    std::vector<sg4::CommPtr> cs;
    bool inter = false;
    for (auto& f : flows) {
        if (f.bytes > 0) {
            check_route(f.src, f.dst);
            cs.push_back(sg4::Comm::sendto_async(g_workers[f.src], g_workers[f.dst],
                                                 (uint64_t)std::llround(f.bytes * (g_seg ? 1 : g.wire))));
        }
        inter = inter || !same_host(f.src, f.dst);
    }
    sg4::Comm::wait_all(cs);
    double a = inter ? g.alpha : g.alpha_intra, gm = inter ? g.gamma : g.gamma_intra;
    sg4::this_actor::sleep_for(a + gm * reduced);
    return sg4::Engine::get_clock() - t0;
}

enum Alg { RD, HALVING, RING };

static Alg choose(int n, double bytes)
{
    if (g.force_ring > 0 && n > 1)
        return RING;
    if (n <= 1 || bytes < g.small)
        return RD;
    double ring = g.ring;
    if (ring == 0)
        ring = n <= 2 ? 0 : n == 3 ? 128.0 * (1 << 20)
                                   : (n & (n - 1)) == 0 ? 32.0 * (1 << 20) : 1.0 * (1 << 20);
    return bytes < ring ? HALVING : RING;
}

using Groups = std::vector<std::vector<int>>; // equal-sized, run side by side

static void ring_allreduce(const Groups& gs, double bytes, bool rs, bool ag)
{
    int n = (int)gs[0].size();
    if (n <= 1)
        return;
    double blk = bytes / n;
    std::vector<Flow> fl;
    for (auto& grp : gs)
        for (int i = 0; i < n; i++)
            fl.push_back({grp[i], grp[(i + 1) % n], blk});
    if (rs) {
        double t = phase(fl, blk);
        sg4::this_actor::sleep_for(t * (n - 2));
    }
    if (ag) {
        double t = phase(fl, 0);
        sg4::this_actor::sleep_for(t * (n - 2));
    }
}

static void pow2_allreduce(const Groups& gs, double bytes, Alg a)
{
    int n = (int)gs[0].size(), p2 = 1;
    while (p2 * 2 <= n)
        p2 *= 2;
    int rem = n - p2;
    auto real = [&](int vr) { return vr < rem ? vr * 2 + 1 : vr + rem; };
    std::vector<Flow> fl;
    if (rem) { // fold: even ranks of the first 2*rem send to the odd ones
        for (auto& grp : gs)
            for (int r = 0; r < 2 * rem; r += 2)
                fl.push_back({grp[r], grp[r + 1], bytes});
        phase(fl, bytes);
    }
    if (a == RD) {
        for (int mask = 1; mask < p2; mask <<= 1) {
            fl.clear();
            for (auto& grp : gs)
                for (int v = 0; v < p2; v++)
                    fl.push_back({grp[real(v)], grp[real(v ^ mask)], bytes});
            phase(fl, bytes);
        }
    } else {
        std::vector<double> sizes;
        double sz = bytes;
        for (int mask = p2 / 2; mask >= 1; mask >>= 1) {
            sz /= 2;
            sizes.push_back(sz);
        }
        int step = 0;
        for (int mask = p2 / 2; mask >= 1; mask >>= 1, step++) { // reduce-scatter
            fl.clear();
            for (auto& grp : gs)
                for (int v = 0; v < p2; v++)
                    fl.push_back({grp[real(v)], grp[real(v ^ mask)], sizes[step]});
            phase(fl, sizes[step]);
        }
        for (int mask = 1; mask < p2; mask <<= 1) { // allgather
            step--;
            fl.clear();
            for (auto& grp : gs)
                for (int v = 0; v < p2; v++)
                    fl.push_back({grp[real(v)], grp[real(v ^ mask)], sizes[step]});
            phase(fl, 0);
        }
    }
    if (rem) {
        fl.clear();
        for (auto& grp : gs)
            for (int r = 0; r < 2 * rem; r += 2)
                fl.push_back({grp[r + 1], grp[r], bytes});
        phase(fl, 0);
    }
}

static void flat_allreduce(const Groups& gs, double bytes)
{
    int n = (int)gs[0].size();
    if (n <= 1 || bytes <= 0)
        return;
    Alg a = choose(n, bytes);
    if (a == RING)
        ring_allreduce(gs, bytes, true, true);
    else
        pow2_allreduce(gs, bytes, a);
}

// dt_coll_allreduce on the first n workers.
static const char* allreduce(int n, double bytes)
{
    if (n <= 1 || bytes <= 0)
        return "-";
    int hosts = (n + g.gpus - 1) / g.gpus;
    std::vector<int> all(n);
    for (int i = 0; i < n; i++)
        all[i] = i;
    if (hosts == 1 && g.shm > 0) { // the whole job on one host: the segment
        g_seg = true;
        ring_allreduce({all}, bytes, true, true);
        g_seg = false;
        return "shm";
    }
    if (g.shm > 0 && g.gpus > 1 && n % g.gpus == 0 && bytes >= g.hier) {
        Groups intra(hosts), inter(g.gpus);
        for (int i = 0; i < n; i++) {
            intra[i / g.gpus].push_back(i);
            inter[i % g.gpus].push_back(i);
        }
        g_seg = true;
        ring_allreduce(intra, bytes, true, false);
        g_seg = false;
        flat_allreduce(inter, bytes / g.gpus);
        g_seg = true;
        ring_allreduce(intra, bytes, false, true);
        g_seg = false;
        return "hier";
    }
    flat_allreduce({all}, bytes);
    Alg a = choose(n, bytes);
    return a == RD ? "doubling" : a == HALVING ? "halving" : "ring";
}

// ---- one step ---------------------------------------------------------
struct Bucket {
    double bytes;
    size_t first_layer, last_layer; // model-order indices it covers
};

// grad_sync.c: layers report in reverse order; a bucket is cut when the
// pending range reaches the bucket size; what is left goes at the end.
static std::vector<Bucket> buckets(std::vector<Bucket>* tail)
{
    std::vector<Bucket> out;
    double pending = 0;
    size_t hi = g.layers.size();
    for (size_t i = g.layers.size(); i-- > 0;) {
        if (g.layers[i].bytes <= 0)
            continue;
        pending += g.layers[i].bytes;
        if (pending >= g.bucket) {
            out.push_back({pending, i, hi - 1});
            pending = 0;
            hi = i;
        }
    }
    if (tail) {
        tail->clear();
        if (pending > 0)
            tail->push_back({pending, 0, hi - 1});
    }
    return out;
}

struct Result {
    double step = 0, comm = 0, exposed = 0, backward_end = 0;
    double data = 0; // waited for the loaders' next batch
    std::string algs;
};
static Result g_res;

// grad_sync's queue and condition variable: the backward actor appends a
// bucket and releases the semaphore; the comm actor takes them in order.
// (No mailbox: a zero-byte message between actors of one host would still
// pay the host's link latency, which dt's in-process handoff does not.)
static std::deque<Bucket> g_queue;
static sg4::SemaphorePtr g_ready, g_done;

static void note_alg(const char* a)
{
    if (g_res.algs.find(a) == std::string::npos)
        g_res.algs += std::string(g_res.algs.empty() ? "" : ",") + a;
}

static void comm_actor(int nb)
{
    for (int i = 0; i < nb; i++) {
        g_ready->acquire();
        Bucket b = g_queue.front();
        g_queue.pop_front();
        double t0 = sg4::Engine::get_clock();
        note_alg(allreduce(g_n, b.bytes));
        g_res.comm += sg4::Engine::get_clock() - t0;
    }
    g_done->release();
}

// Horovod's background loop (horovod/common/operations.cc): every cycle it
// takes the tensors reported ready since, fuses them up to the fusion
// buffer (a bigger tensor goes alone) and allreduces them; the next cycle
// starts when that allreduce is done. Here the backward actor queues every
// layer's gradient as it is ready.
static double g_step_t0;
static void fusion_actor(int nl)
{
    int taken = 0;
    while (taken < nl) {
        g_ready->acquire();
        double now = sg4::Engine::get_clock();
        double ticks = std::ceil((now - g_step_t0) / g.cycle - 1e-12);
        sg4::this_actor::sleep_until(g_step_t0 + ticks * g.cycle);
        Bucket b = g_queue.front();
        g_queue.pop_front();
        taken++;
        double bytes = b.bytes;
        while (!g_queue.empty() && bytes + g_queue.front().bytes <= g.fusion) {
            g_ready->acquire(); // counted: does not block
            bytes += g_queue.front().bytes;
            g_queue.pop_front();
            taken++;
        }
        double t0 = sg4::Engine::get_clock();
        note_alg(allreduce(g_n, bytes));
        g_res.comm += sg4::Engine::get_clock() - t0;
    }
    g_done->release();
}

static double compute_factor(int n)
{
    auto it = g.compute_factor.find(n);
    return it == g.compute_factor.end() ? 1.0 : it->second;
}

// The optimizer and the fixed data wait, then the next batch: the
// loaders began it when this step took its own (at t0), so the step ends
// no earlier than t0 + load.
static void step_end(double t0, double cf)
{
    sg4::this_actor::sleep_for(g.optimizer * cf + g.data_wait);
    double wait = t0 + g.load - sg4::Engine::get_clock();
    if (wait > 0) {
        g_res.data = wait;
        sg4::this_actor::sleep_for(wait);
    }
    g_res.step = sg4::Engine::get_clock();
}

static void step_fusion()
{
    int nl = 0;
    for (auto& l : g.layers)
        nl += l.bytes > 0;
    if (g_n <= 1)
        nl = 0;
    g_queue.clear();
    g_ready = sg4::Semaphore::create(0);
    g_done = sg4::Semaphore::create(0);
    g_step_t0 = sg4::Engine::get_clock();
    double t0 = g_step_t0;
    sg4::Actor::create("fusion", g_workers[0], fusion_actor, nl);
    double cf = compute_factor(g_n);
    sg4::this_actor::sleep_for(g.forward * cf);
    for (size_t i = g.layers.size(); i-- > 0;) {
        sg4::this_actor::sleep_for(g.layers[i].bwd * cf);
        if (nl && g.layers[i].bytes > 0) {
            g_queue.push_back({g.layers[i].bytes, i, i});
            g_ready->release();
        }
    }
    g_res.backward_end = sg4::Engine::get_clock();
    g_done->acquire();
    g_res.exposed = sg4::Engine::get_clock() - g_res.backward_end;
    step_end(t0, cf);
}

static void step_actor()
{
    if (g.cycle > 0) {
        step_fusion();
        return;
    }
    std::vector<Bucket> tail;
    auto bs = buckets(&tail);
    int nb = g_n > 1 ? (int)bs.size() : 0;
    g_queue.clear();
    g_ready = sg4::Semaphore::create(0);
    g_done = sg4::Semaphore::create(0);
    double t0 = sg4::Engine::get_clock();
    sg4::Actor::create("comm", g_workers[0], comm_actor, nb);
    double cf = compute_factor(g_n);
    sg4::this_actor::sleep_for(g.forward * cf);
    size_t next = 0;
    for (size_t i = g.layers.size(); i-- > 0;) {
        sg4::this_actor::sleep_for(g.layers[i].bwd * cf);
        if (next < bs.size() && bs[next].first_layer == i) {
            if (g_n > 1) {
                g_queue.push_back(bs[next]);
                g_ready->release();
            }
            next++;
        }
    }
    g_res.backward_end = sg4::Engine::get_clock();
    g_done->acquire(); // dt_grad_sync_finish: every queued bucket reduced
    for (auto& b : tail) { // the remainder, on the main thread
        double c0 = sg4::Engine::get_clock();
        note_alg(allreduce(g_n, b.bytes));
        g_res.comm += sg4::Engine::get_clock() - c0;
    }
    g_res.exposed = sg4::Engine::get_clock() - g_res.backward_end;
    step_end(t0, cf);
}

static double g_ring_time;
static void ring_actor(int n, double bytes)
{
    std::vector<int> all(n);
    for (int i = 0; i < n; i++)
        all[i] = i;
    ring_allreduce({all}, bytes, true, true);
    g_ring_time = sg4::Engine::get_clock();
}

// One row of the table; one: the step at N = 1. Printed as each N is
// done: a long plan shows its progress, and a failure keeps the rows.
static void print_row(int n, const Result& r, double one)
{
    double sps = (double)g.batch * n / r.step;
    std::printf("  %6d %12.3f %12.1f %9.1f%% %8.1f%% %11.3f %11.3f  %s\n", n, r.step * 1e3, sps,
                100.0 * one / r.step, 100.0 * r.comm / r.step, r.exposed * 1e3, r.comm * 1e3,
                r.algs.empty() ? "-" : r.algs.c_str());
    std::fflush(stdout);
}

// Steps that waited for their data: the loaders, not the compute or the
// network, set their time.
static void print_data_bound(const std::vector<int>& ns, const std::vector<Result>& rs)
{
    int first = 0, last = 0;
    double most = 0;
    for (size_t i = 0; i < ns.size(); i++)
        if (rs[i].data > 1e-9) {
            if (!first)
                first = ns[i];
            last = ns[i];
            most = std::max(most, rs[i].data);
        }
    if (first)
        std::printf("# data-bound at N = %d%s%s: the loaders need %.3f ms a batch, "
                    "the step waits up to %.3f ms for it (more [data] "
                    "loader_threads, decode = load, or faster hosts)\n",
                    first, last != first ? ".." : "",
                    last != first ? std::to_string(last).c_str() : "", g.load * 1e3,
                    most * 1e3);
}

// The step-time table, N = 1, 2, 4, ... and the maximum: one engine, the
// steps one after another, each N in its own actor once the previous one
// finished (the clock is reset by offset).
static int plan_table(sg4::Engine& e)
{
    std::vector<int> ns;
    for (int n = 1; n <= g.max_workers; n *= 2)
        ns.push_back(n);
    if (ns.back() != g.max_workers)
        ns.push_back(g.max_workers);
    std::vector<Result> rs;
    std::printf("# %6s %12s %12s %10s %9s %11s %11s  %s\n", "N", "step(ms)", "samples/s",
                "efficiency", "comm(%)", "exposed(ms)", "comm(ms)", "allreduce");
    sg4::Actor::create("driver", g_workers[0], [&ns, &rs]() {
        for (int n : ns) {
            g_n = n;
            g_res = Result();
            double t0 = sg4::Engine::get_clock();
            auto a = sg4::Actor::create("step", g_workers[0], step_actor);
            a->join();
            g_res.step -= t0;
            g_res.backward_end -= t0;
            if (!std::isfinite(g_res.step))
                return;
            rs.push_back(g_res);
            print_row(n, g_res, rs[0].step);
        }
    });
    e.run();
    // SimGrid ends a run whose flows can never complete (the clock at
    // infinity) by killing the step: a row short, or never finished.
    if (rs.size() != ns.size())
        die("the step at N = " + std::to_string(ns[rs.size()]) +
            " never ended in the simulation (SimGrid found flows that cannot complete): "
            "a rate, latency or cost out of proportion; check the network, the profile "
            "and the platform file");
    print_data_bound(ns, rs);
    return 0;
}

static void engine_args(int* ac, char** av, std::vector<std::string>& keep)
{
    keep = {av[0], "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
            "--log=root.thres:critical"};
    *ac = (int)keep.size();
    for (int i = 0; i < *ac; i++)
        av[i] = (char*)keep[i].c_str();
}

int main(int argc, char** argv)
{
    std::vector<std::string> keep;
    std::vector<char*> av(argv, argv + argc);
    av.resize(8);
    int mode = 0, ring_n = 0;
    double ring_bytes = 0;
    const char* spec;
    if (argc == 5 && std::string(argv[1]) == "--ring") {
        mode = 1;
        ring_n = std::atoi(argv[2]);
        ring_bytes = std::atof(argv[3]);
        spec = argv[4];
    } else if (argc == 3 && std::string(argv[1]) == "--order") {
        mode = 2;
        spec = argv[2];
    } else if (argc == 2) {
        spec = argv[1];
    } else {
        std::fprintf(stderr, "usage: dt-plan-sim [--ring N BYTES | --order] SPEC\n");
        return 2;
    }
    g = read_spec(spec);
    if (mode == 2) {
        std::vector<Bucket> tail;
        auto bs = buckets(&tail);
        for (auto& b : tail)
            bs.push_back(b);
        for (auto& b : bs)
            std::printf("bucket layers %zu-%zu bytes %.0f\n", b.first_layer, b.last_layer, b.bytes);
        return 0;
    }
    int ac;
    engine_args(&ac, av.data(), keep);
    if (mode == 1) {
        if (ring_n < 2 || ring_n > g.hosts * g.gpus)
            die("--ring N: 2 to hosts x gpus_per_host");
        g.max_workers = g_n = ring_n;
        sg4::Engine e(&ac, av.data());
        build_platform(e);
        sg4::Actor::create("ring", g_workers[0], ring_actor, ring_n, ring_bytes);
        e.run();
        // closed form: per step 2 link latencies + alpha, the block over the link
        double n = ring_n, lat = g.gpus > 1 ? g.intra_lat : g.net_lat,
               bw = g.gpus > 1 ? g.intra_bw : g.net_bw;
        double cf = 2 * (n - 1) * (g.alpha + lat) + 2 * (n - 1) / n * ring_bytes * g.wire / bw +
                    (n - 1) / n * ring_bytes * g.gamma;
        std::printf("simulated %.9f closed_form %.9f\n", g_ring_time, cf);
        return 0;
    }
    if (g.max_workers > g.hosts * g.gpus)
        die("more workers asked than the platform has GPUs");
    sg4::Engine e(&ac, av.data());
    build_platform(e);
    return plan_table(e);
}
