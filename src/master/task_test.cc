// Copy and move tasks on the master (master_tasks.cc): what a task is refused for, the copies it
// hands the targets' owners, a move's drop of its source, failures, and a restart in the middle.
#include <gtest/gtest.h>

#include <algorithm>

#include "master/master_test_util.h"

namespace yb {
namespace {

using testing::MasterFixture;

class TaskTest : public MasterFixture {
 protected:
  void SetUp() override {
    MasterConfig c;
    c.repair_bandwidth = 0;  // re-replication off: every copy here is a task's
    Reset(c);
    a_ = Register(ClientId{11, 11});
    b_ = Register(ClientId{12, 12});
    c_ = Register(ClientId{13, 13});
    sa_ = Mount("a", 1 << 20, a_);
    sb_ = Mount("b", 1 << 20, b_);
    sc_ = Mount("c", 1 << 20, c_);
  }
  Status PutOn(const std::string& key, const std::string& segment) {
    ReplicateConfig rc;
    rc.preferred_segments = {segment};
    return Put(key, 1000, rc);
  }
  TaskId Copy(const std::string& key, std::vector<std::string> targets) {
    auto id = master_->CreateTask(ctx_, TaskSpec{{}, TaskType::kCopy, key, "", std::move(targets)});
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : TaskId{};
  }
  TaskInfo Query(const TaskId& id) {
    auto t = master_->QueryTask(ctx_, id);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : TaskInfo{};
  }
  // The copy `owner` was handed, made (or failed with `status`) and reported.
  void MakeCopy(const CallContext& owner, SegmentId target, Status status = Status::OK()) {
    auto tasks = master_->RepairFetch(owner, 10);
    ASSERT_TRUE(tasks.ok());
    ASSERT_EQ(tasks->size(), 1u);
    EXPECT_EQ((*tasks)[0].target, target);
    auto done = master_->RepairDone(owner, {{(*tasks)[0].task_id, status}});
    ASSERT_EQ(done.size(), 1u);
  }
  CallContext a_, b_, c_;
  SegmentId sa_ = 0, sb_ = 0, sc_ = 0;
};

TEST_F(TaskTest, ACopyTaskHasEachTargetsOwnerCopyItThenSucceeds) {
  ASSERT_TRUE(PutOn("k", "a").ok());
  const TaskId id = Copy("k", {"b", "c"});
  TaskInfo t = Query(id);
  EXPECT_EQ(t.status, TaskStatus::kPending);
  EXPECT_EQ(t.type, TaskType::kCopy);
  EXPECT_GT(t.created_ms, 0);
  EXPECT_EQ(master_->Stats().tasks_unfinished, 1u);
  EXPECT_EQ(master_->TasksOnce(), 1u);
  EXPECT_EQ(master_->Ping(b_, 1)->repairs, 1u);
  t = Query(id);
  EXPECT_EQ(t.status, TaskStatus::kProcessing);
  EXPECT_EQ(t.assigned_client, b_.client);
  EXPECT_EQ(master_->TasksOnce(), 0u);  // nothing to look at while its copy is out
  MakeCopy(b_, sb_);
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sa_, sb_}));
  EXPECT_EQ(master_->TasksOnce(), 1u);
  MakeCopy(c_, sc_);
  EXPECT_EQ(master_->TasksOnce(), 1u);
  t = Query(id);
  EXPECT_EQ(t.status, TaskStatus::kSuccess) << t.message;
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sa_, sb_, sc_}));
  EXPECT_EQ(master_->TasksOnce(), 0u);
  EXPECT_EQ(master_->Stats().tasks_unfinished, 0u);
  EXPECT_EQ(master_->Stats().repaired, 0u);  // a task's copies are not repairs
  // A target that already holds it needs no copy.
  const TaskId again = Copy("k", {"a"});
  master_->TasksOnce();
  EXPECT_EQ(Query(again).status, TaskStatus::kSuccess);
  EXPECT_EQ(Replicas("k").size(), 3u);
}

TEST_F(TaskTest, AMoveDropsItsSourceOnceTheCopyIsInAndNoReaderHoldsIt) {
  ASSERT_TRUE(PutOn("k", "a").ok());
  auto id = master_->CreateTask(ctx_, TaskSpec{{}, TaskType::kMove, "k", "a", {"c"}});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  master_->TasksOnce();
  MakeCopy(c_, sc_);
  auto read = master_->GetReplicaList(ctx_, "k", true);  // a reader on it
  ASSERT_TRUE(read.ok());
  master_->TasksOnce();
  EXPECT_EQ(Query(*id).status, TaskStatus::kProcessing);  // waits for the reader
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sa_, sc_}));
  ASSERT_TRUE(master_->ReadEnd(ctx_, "k", read->read_pin).ok());
  master_->TasksOnce();
  TaskInfo t = Query(*id);
  EXPECT_EQ(t.status, TaskStatus::kSuccess) << t.message;
  EXPECT_EQ(t.type, TaskType::kMove);
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sc_}));
  EXPECT_EQ(master_->TenantUsed(ctx_.tenant), 1000u);  // the source's space went back
}

TEST_F(TaskTest, BadTasksAreRefusedWithMooncakesCodes) {
  ASSERT_TRUE(PutOn("k", "a").ok());
  auto create = [&](TaskType type, std::string key, std::string source, std::vector<std::string> targets) {
    return master_->CreateTask(ctx_, TaskSpec{{}, type, std::move(key), std::move(source), std::move(targets)})
        .status()
        .code();
  };
  EXPECT_EQ(create(TaskType::kCopy, "nothing", "", {"b"}), Code::kObjectNotFound);
  EXPECT_EQ(create(TaskType::kMove, "nothing", "a", {"b"}), Code::kObjectNotFound);
  EXPECT_EQ(create(TaskType::kCopy, "k", "", {}), Code::kInvalidParams);
  EXPECT_EQ(create(TaskType::kCopy, "k", "", {"b", "nowhere"}), Code::kInvalidParams);
  EXPECT_EQ(create(TaskType::kMove, "k", "a", {"a"}), Code::kInvalidParams);        // onto itself
  EXPECT_EQ(create(TaskType::kMove, "k", "b", {"c"}), Code::kInvalidParams);        // b holds none
  EXPECT_EQ(create(TaskType::kMove, "k", "a", {"nowhere"}), Code::kInvalidParams);  // no such target
  EXPECT_EQ(create(TaskType::kMove, "k", "a", {"b", "c"}), Code::kInvalidParams);   // one target
  EXPECT_EQ(create(TaskType::kCopy, "", "", {"b"}), Code::kInvalidKey);
  ASSERT_TRUE(master_->DrainSegment(c_, sc_).ok());
  EXPECT_EQ(create(TaskType::kCopy, "k", "", {"c"}), Code::kUnavailableInCurrentStatus);
  EXPECT_EQ(master_->QueryTask(ctx_, TaskId{1, 2}).status().code(), Code::kTaskNotFound);
  EXPECT_EQ(ToMooncakeCode(Code::kTaskNotFound), -1400);
  // The same id again (an answer lost, the call made again) is the same task, not a second one.
  const TaskSpec spec{TaskId{7, 7}, TaskType::kCopy, "k", "", {"b"}};
  ASSERT_EQ(*master_->CreateTask(ctx_, spec), (TaskId{7, 7}));
  ASSERT_EQ(*master_->CreateTask(ctx_, spec), (TaskId{7, 7}));
  EXPECT_EQ(master_->TasksOnce(), 1u);
  EXPECT_EQ(master_->CreateTask(ctx_, TaskSpec{TaskId{7, 7}, TaskType::kMove, "k", "a", {"b"}}).status().code(),
            Code::kInvalidParams);  // the id is another task's
}

TEST_F(TaskTest, AnotherTenantsCallerCannotSeeATask) {
  ASSERT_TRUE(PutOn("k", "a").ok());
  const TaskId id = Copy("k", {"b"});
  CallContext other = Register(ClientId{21, 21}, "other");
  other.privileged = false;
  EXPECT_EQ(master_->QueryTask(other, id).status().code(), Code::kTaskNotFound);
  other.tenant = ctx_.tenant;
  EXPECT_TRUE(master_->QueryTask(other, id).ok());
  // And its key is its own: the other tenant has no "k".
  CallContext t2 = Register(ClientId{22, 22}, "other");
  EXPECT_EQ(master_->CreateTask(t2, TaskSpec{{}, TaskType::kCopy, "k", "", {"b"}}).status().code(),
            Code::kObjectNotFound);
}

TEST_F(TaskTest, CopiesThatKeepFailingFailTheTaskWithTheirReason) {
  ASSERT_TRUE(PutOn("k", "a").ok());
  const TaskId id = Copy("k", {"b"});
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(master_->TasksOnce(), 1u);
    MakeCopy(b_, sb_, Status(Code::kTransferFail, "peer went away"));
  }
  master_->TasksOnce();
  TaskInfo t = Query(id);
  EXPECT_EQ(t.status, TaskStatus::kFailed);
  EXPECT_NE(t.message.find("peer went away"), std::string::npos) << t.message;
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sa_}));
  // The failed copies' ranges were freed (fenced a while).
  EXPECT_EQ(master_->Stats().allocated - master_->Stats().held, 1024u);
}

TEST_F(TaskTest, ATaskEndsFailedWhenItsObjectOrTargetGoesOrItsTimeRunsOut) {
  ASSERT_TRUE(PutOn("k", "a").ok());
  ASSERT_TRUE(PutOn("j", "a").ok());
  ASSERT_TRUE(PutOn("slow", "a").ok());
  const TaskId removed = Copy("k", {"b"});
  const TaskId gone = Copy("j", {"c"});
  ASSERT_TRUE(master_->Remove(ctx_, "k", true).ok());
  ASSERT_TRUE(master_->UnmountSegment(c_, sc_).ok());
  master_->TasksOnce();
  TaskInfo t = Query(removed);
  EXPECT_EQ(t.status, TaskStatus::kFailed);
  EXPECT_NE(t.message.find("removed"), std::string::npos) << t.message;
  t = Query(gone);
  EXPECT_EQ(t.status, TaskStatus::kFailed);
  EXPECT_NE(t.message.find("'c'"), std::string::npos) << t.message;
  // A copy never reported: given up with the re-replication timeout, then made again, until the
  // task's own time is out.
  const TaskId slow = Copy("slow", {"b"});
  master_->TasksOnce();
  EXPECT_EQ(master_->RepairFetch(b_, 10)->size(), 1u);
  clock_.AdvanceSec(config_.task_timeout_sec);
  master_->RepairOnce();  // gives the copy up
  master_->TasksOnce();
  t = Query(slow);
  EXPECT_EQ(t.status, TaskStatus::kFailed);
  EXPECT_NE(t.message.find("--task_timeout_sec"), std::string::npos) << t.message;
}

// A copy task survives a master restart (issue 33): its record is in the log, its copy in flight
// is not, and the restarted master makes the copy again once the segments are mounted again.
TEST_F(TaskTest, ATaskSurvivesARestartAndIsCarriedOn) {
  ASSERT_TRUE(PutOn("k", "a").ok());
  ASSERT_TRUE(PutOn("done", "a").ok());
  const TaskId finished = Copy("done", {"c"});
  master_->TasksOnce();
  MakeCopy(c_, sc_);
  master_->TasksOnce();
  ASSERT_EQ(Query(finished).status, TaskStatus::kSuccess);
  const TaskId id = Copy("k", {"b"});
  master_->TasksOnce();
  ASSERT_EQ(Query(id).status, TaskStatus::kProcessing);
  MasterImage image;
  master_->WriteImage([&](const pb::LogRecord& r) { image.Apply(r); });
  EXPECT_EQ(image.tasks.size(), 2u);
  master_ = MasterService::Create(config_, clock_).value();
  ASSERT_TRUE(master_->Load(image).ok());
  EXPECT_EQ(master_->QueryTask(ctx_, finished)->status, TaskStatus::kSuccess);
  EXPECT_EQ(master_->QueryTask(ctx_, id)->status, TaskStatus::kProcessing);
  master_->TasksOnce();  // its segments wait for their owners: nothing fails meanwhile
  EXPECT_EQ(master_->QueryTask(ctx_, id)->status, TaskStatus::kProcessing);
  for (auto* c : {&ctx_, &a_, &b_, &c_}) {  // each client registers again, proving its id
    auto again = master_->RegisterClient({c->client, "host", "default", false, c->token});
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    *c = *again;
  }
  const std::vector<std::pair<CallContext, SegmentId>> mounts{{a_, sa_}, {b_, sb_}, {c_, sc_}};
  for (const auto& [owner, id_] : mounts) {
    SegmentMount d{id_, id_ == sa_ ? "a" : id_ == sb_ ? "b" : "c", 0x10000000ULL * (id_ + 1), 1 << 20, "local"};
    ASSERT_TRUE(master_->MountSegment(owner, d).ok());
  }
  master_->TasksOnce();
  MakeCopy(b_, sb_);
  master_->TasksOnce();
  EXPECT_EQ(master_->QueryTask(ctx_, id)->status, TaskStatus::kSuccess);
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sa_, sb_}));
}

}  // namespace
}  // namespace yb
