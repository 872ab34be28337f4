// The owner decision behind the start-up sweep (owner.h): a container is a leftover only when
// its owner is provably gone. /proc and the engine are faked.
#include "sandbox/service/owner.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

namespace sandbox::service {
namespace {

class FakeProbe final : public OwnerProbe {
 public:
  std::map<std::int64_t, ProcStat> processes;
  std::map<std::string, ContainerLife> containers;
  bool engine_down = false;

  std::optional<ProcStat> FindProcess(std::int64_t pid) const override {
    auto it = processes.find(pid);
    if (it == processes.end()) return std::nullopt;
    return it->second;
  }
  Result<ContainerLife> FindContainer(const std::string& id) const override {
    if (engine_down) return Error(ErrorCode::kUnavailable, "engine down");
    auto it = containers.find(id);
    if (it == containers.end()) return ContainerLife{};
    return it->second;
  }
};

const std::string kIdA(64, 'a');
const std::string kIdB(64, 'b');

Owner HostProcess(std::int64_t pid, std::uint64_t start) {
  Owner o;
  o.boot_id = "boot-1";
  o.pid_namespace = "pid:[4026531836]";
  o.pid = pid;
  o.start_ticks = start;
  return o;
}

Owner InContainer(const std::string& id, const std::string& started, std::int64_t pid) {
  Owner o = HostProcess(pid, 100);
  o.pid_namespace = "pid:[4026532000]";
  o.container_id = id;
  o.container_started_at = started;
  return o;
}

TEST(OwnerTest, FormatParseRoundTrip) {
  Owner o = InContainer(kIdA, "2026-12-03T17:00:00.123456789Z", 7);
  auto back = ParseOwner(FormatOwner(o));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->boot_id, o.boot_id);
  EXPECT_EQ(back->pid_namespace, o.pid_namespace);
  EXPECT_EQ(back->pid, 7);
  EXPECT_EQ(back->start_ticks, 100U);
  EXPECT_EQ(back->container_id, kIdA);
  EXPECT_EQ(back->container_started_at, o.container_started_at);
  auto host = ParseOwner(FormatOwner(HostProcess(42, 9)));
  ASSERT_TRUE(host.has_value());
  EXPECT_TRUE(host->container_id.empty());
}

TEST(OwnerTest, ParseRefusesWhatItCannotCheck) {
  EXPECT_FALSE(ParseOwner(""));
  EXPECT_FALSE(ParseOwner("v2 boot=b pidns=n pid=1 start=1"));
  EXPECT_FALSE(ParseOwner("v1 boot=b pidns=n start=1"));                    // no pid
  EXPECT_FALSE(ParseOwner("v1 boot=b pidns=n pid=x start=1"));              // pid not a number
  EXPECT_FALSE(ParseOwner("v1 boot=b pidns=n pid=0 start=1"));              // no such pid
  EXPECT_FALSE(ParseOwner("v1 pidns=n pid=3 start=1"));                     // no boot id
  EXPECT_FALSE(ParseOwner("v1 boot=b pidns=n pid=3 start=1 container=x"));  // no start time
  EXPECT_TRUE(ParseOwner("v1 boot=b pidns=n pid=3 start=1 later=field"));   // newer keys ignored
}

TEST(OwnerTest, ParsesProcStatWithAwkwardNames) {
  // Field 22 (starttime) counted from the last ')': the name may hold spaces and parentheses.
  const std::string stat =
      "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 987654 10000 200 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto parsed = ParseProcStat(stat);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->state, 'S');
  EXPECT_EQ(parsed->start_ticks, 987654U);
  EXPECT_FALSE(ParseProcStat("1234 (x) S 1 2"));
  EXPECT_FALSE(ParseProcStat("garbage"));
}

TEST(OwnerTest, LiveHostProcessIsAlive) {
  FakeProbe probe;
  probe.processes[50] = {'S', 777};
  auto d = DecideOwner(HostProcess(50, 777), HostProcess(60, 1), true, probe);
  EXPECT_EQ(d.verdict, OwnerVerdict::kAlive) << d.reason;
}

TEST(OwnerTest, ExitedOrReusedPidIsGone) {
  FakeProbe probe;
  const Owner self = HostProcess(60, 1);
  EXPECT_EQ(DecideOwner(HostProcess(50, 777), self, true, probe).verdict, OwnerVerdict::kGone);
  probe.processes[50] = {'S', 778};  // the pid now belongs to a later process
  auto reused = DecideOwner(HostProcess(50, 777), self, true, probe);
  EXPECT_EQ(reused.verdict, OwnerVerdict::kGone);
  EXPECT_NE(reused.reason.find("reused"), std::string::npos) << reused.reason;
  probe.processes[50] = {'Z', 777};  // exited, not yet reaped by its parent
  EXPECT_EQ(DecideOwner(HostProcess(50, 777), self, true, probe).verdict, OwnerVerdict::kGone);
}

TEST(OwnerTest, ThisServerIsAliveWithoutLookingItUp) {
  FakeProbe probe;  // no processes at all: the answer must not depend on the probe
  EXPECT_EQ(DecideOwner(HostProcess(60, 1), HostProcess(60, 1), true, probe).verdict,
            OwnerVerdict::kAlive);
}

TEST(OwnerTest, AnotherBootIsGoneOnlyForALocalEngine) {
  FakeProbe probe;
  Owner before = HostProcess(50, 777);
  before.boot_id = "boot-0";
  probe.processes[50] = {'S', 777};  // even a process with the same numbers is another one
  EXPECT_EQ(DecideOwner(before, HostProcess(60, 1), true, probe).verdict, OwnerVerdict::kGone);
  EXPECT_EQ(DecideOwner(before, HostProcess(60, 1), false, probe).verdict, OwnerVerdict::kUnknown);
}

TEST(OwnerTest, AnotherPidNamespaceIsUnknown) {
  FakeProbe probe;
  Owner other = HostProcess(50, 777);
  other.pid_namespace = "pid:[4026539999]";
  EXPECT_EQ(DecideOwner(other, HostProcess(60, 1), true, probe).verdict, OwnerVerdict::kUnknown);
}

TEST(OwnerTest, ContainerOwnerIsCheckedThroughTheEngine) {
  FakeProbe probe;
  const Owner owner = InContainer(kIdA, "T1", 1);
  const Owner self = HostProcess(60, 1);
  EXPECT_EQ(DecideOwner(owner, self, true, probe).verdict, OwnerVerdict::kGone);  // no such
  probe.containers[kIdA] = {true, false, "T1"};
  EXPECT_EQ(DecideOwner(owner, self, true, probe).verdict, OwnerVerdict::kGone);  // stopped
  probe.containers[kIdA] = {true, true, "T2"};
  EXPECT_EQ(DecideOwner(owner, self, true, probe).verdict, OwnerVerdict::kGone);  // restarted
  probe.containers[kIdA] = {true, true, "T1"};
  EXPECT_EQ(DecideOwner(owner, self, true, probe).verdict, OwnerVerdict::kAlive);
  // Remote engine: a container owner can still be checked.
  EXPECT_EQ(DecideOwner(owner, self, false, probe).verdict, OwnerVerdict::kAlive);
  probe.engine_down = true;
  EXPECT_EQ(DecideOwner(owner, self, true, probe).verdict, OwnerVerdict::kUnknown);
}

TEST(OwnerTest, ServerInAnotherContainerIsCheckedThroughTheEngine) {
  FakeProbe probe;
  probe.containers[kIdA] = {true, true, "T1"};
  // The owner's pid 1 is of its container's namespace: never looked up in ours.
  probe.processes[1] = {'S', 1};
  EXPECT_EQ(
      DecideOwner(InContainer(kIdA, "T1", 1), InContainer(kIdB, "T9", 1), true, probe).verdict,
      OwnerVerdict::kAlive);
  probe.containers.erase(kIdA);
  EXPECT_EQ(
      DecideOwner(InContainer(kIdA, "T1", 1), InContainer(kIdB, "T9", 1), true, probe).verdict,
      OwnerVerdict::kGone);
}

TEST(OwnerTest, OwnContainerRestartedIsGone) {
  FakeProbe probe;
  // compose: restart: unless-stopped keeps the id; the start time tells the runs apart.
  EXPECT_EQ(
      DecideOwner(InContainer(kIdA, "T1", 1), InContainer(kIdA, "T2", 1), true, probe).verdict,
      OwnerVerdict::kGone);
  // Same container run, another process of it: checked in the shared PID namespace.
  Owner sibling = InContainer(kIdA, "T2", 9);
  EXPECT_EQ(DecideOwner(sibling, InContainer(kIdA, "T2", 1), true, probe).verdict,
            OwnerVerdict::kGone);
  probe.processes[9] = {'S', 100};
  EXPECT_EQ(DecideOwner(sibling, InContainer(kIdA, "T2", 1), true, probe).verdict,
            OwnerVerdict::kAlive);
}

TEST(OwnerTest, UnlabelledSweptOnlyWhenStoppedOrTooOld) {
  engine::Listed c;
  c.created = 1000;
  c.state = "running";
  const std::chrono::seconds life{600};
  EXPECT_FALSE(SweepUnlabelled(c, life, 1500));
  EXPECT_TRUE(SweepUnlabelled(c, life, 1601));
  c.state = "exited";
  EXPECT_TRUE(SweepUnlabelled(c, life, 1001));
  c.state = "dead";
  EXPECT_TRUE(SweepUnlabelled(c, life, 1001));
  c.state = "created";  // a live old server may be starting it right now
  EXPECT_FALSE(SweepUnlabelled(c, life, 1001));
}

TEST(OwnerTest, ContainerIdFromTheHostnameBindMount) {
  const std::string id(64, 'c');
  const std::string inside =
      "600 500 0:50 / / rw,relatime - overlay overlay rw\n"
      "610 600 8:1 /var/lib/docker/containers/" +
      id + "/hostname /etc/hostname rw,relatime - ext4 /dev/sda1 rw\n";
  EXPECT_EQ(ContainerIdFromMountinfo(inside), id);
  // On a host, the engine's per-container mounts appear elsewhere: not ours.
  const std::string host =
      "30 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
      "700 30 0:60 / /var/lib/docker/containers/" +
      id + "/mounts/shm rw - tmpfs shm rw\n";
  EXPECT_EQ(ContainerIdFromMountinfo(host), "");
  EXPECT_EQ(ContainerIdFromMountinfo("610 600 8:1 /x/hostname /etc/hostname rw - ext4 a rw\n"), "");
}

}  // namespace
}  // namespace sandbox::service
