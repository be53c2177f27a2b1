#include "etcd/etcd_client.h"

#include <httplib.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "common/segment_name.h"
#include "net/auth.h"

namespace yb {
namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

Status EtcdError(const std::string& what) { return Status(Code::kEtcdOperationError, what); }

// etcd's gateway writes 64-bit integers as strings. Anything else (or nothing) is 0: what etcd
// answers is parsed without trusting its shape.
int64_t Int(const json& j, const char* field) {
  if (!j.is_object() || !j.contains(field)) return 0;
  const json& v = j[field];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_string()) return 0;
  const std::string& s = v.get_ref<const std::string&>();
  int64_t out = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() ? out : 0;
}

// A string field, or `fallback` when absent or of another type.
std::string Str(const json& j, const char* field, const std::string& fallback = "") {
  if (!j.is_object() || !j.contains(field) || !j[field].is_string()) return fallback;
  return j[field].get<std::string>();
}

Result<EtcdClient::Kv> KvOf(const json& kv) {
  EtcdClient::Kv out;
  if (!kv.is_object()) return EtcdError("etcd returned a key-value that is not an object");
  auto value = Base64Decode(Str(kv, "value"));
  if (!value) return EtcdError("etcd returned a value that is not base64");
  out.value = std::move(*value);
  out.create_revision = Int(kv, "create_revision");
  out.mod_revision = Int(kv, "mod_revision");
  out.lease = Int(kv, "lease");
  return out;
}

// Runs `f`, which reads etcd's answer: an answer of an unexpected shape is an error, never an
// exception out of the client.
template <typename T, typename F>
Result<T> Guarded(const char* call, F&& f) {
  try {
    return f();
  } catch (const json::exception& e) {
    return EtcdError(std::string("etcd's answer to ") + call + " has an unexpected shape: " + e.what());
  }
}

Result<json> Parse(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return EtcdError("etcd answered something that is not JSON: " + text);
  if (j.contains("error") || j.contains("code")) {
    return EtcdError("etcd refused: " + Str(j, "message", Str(j, "error", text)));
  }
  return j;
}

}  // namespace

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v =
        (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (i < in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = in[i + k];
      int d;
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        ++pad;
        d = 0;
      } else if (pad > 0) {
        return std::nullopt;
      } else if (const char* p = std::strchr(kAlphabet, c); p && c != '\0') {
        d = static_cast<int>(p - kAlphabet);
      } else {
        return std::nullopt;
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<char>((v >> 16) & 0xFF));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xFF));
  }
  return out;
}

Result<std::vector<std::pair<std::string, uint16_t>>> EtcdClient::ParseEndpoints(const std::string& spec) {
  std::vector<std::pair<std::string, uint16_t>> out;
  std::string rest = spec;
  if (rest.rfind("etcd://", 0) == 0) rest = rest.substr(7);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find_first_of(";,", start);
    std::string one = rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
    for (const char* scheme : {"etcd://", "http://"}) {
      if (one.rfind(scheme, 0) == 0) one = one.substr(std::strlen(scheme));
    }
    if (!one.empty()) {
      auto hp = ParseHostPort(one);
      if (!hp.ok()) return Status(Code::kInvalidParams, "etcd endpoint '" + one + "': " + hp.status().message());
      out.push_back(*hp);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (out.empty()) return Status(Code::kInvalidParams, "no etcd endpoint in '" + spec + "'");
  return out;
}

EtcdClient::EtcdClient(Options options) : options_(std::move(options)) {}

Result<EtcdClient::Options> EtcdClient::Access(std::string tls_ca, std::string tls_cert, std::string tls_key,
                                               std::string user, const std::string& password_file) {
  if (tls_cert.empty() != tls_key.empty()) {
    return Status(Code::kInvalidParams, "etcd's TLS certificate and key go together (--etcd_tls_cert, --etcd_tls_key)");
  }
  if (user.empty() != password_file.empty()) {
    return Status(Code::kInvalidParams,
                  "etcd's user and password file go together (--etcd_user, --etcd_password_file)");
  }
  Options o;
  o.tls_ca = std::move(tls_ca);
  o.tls_cert = std::move(tls_cert);
  o.tls_key = std::move(tls_key);
  o.user = std::move(user);
  if (!password_file.empty()) {
    auto pw = net::ReadSecretFile(password_file, /*min_size=*/1);
    if (!pw.ok()) return pw.status();
    o.password = std::move(pw).value();
  }
  return o;
}

EtcdClient::Reply EtcdClient::PostTo(const std::string& host, uint16_t port, const std::string& path,
                                     const std::string& body) {
  const std::string url = (options_.tls() ? "https://" : "http://") + host + ":" + std::to_string(port);
  httplib::Client cli(url, options_.tls_cert, options_.tls_key);
  if (options_.tls()) {
    if (!options_.tls_ca.empty()) cli.set_ca_cert_path(options_.tls_ca);
    cli.enable_server_certificate_verification(!options_.tls_ca.empty());
  }
  const auto secs = options_.timeout.count() / 1000;
  const auto usecs = (options_.timeout.count() % 1000) * 1000;
  cli.set_connection_timeout(secs, usecs);
  cli.set_read_timeout(secs, usecs);
  cli.set_write_timeout(secs, usecs);
  httplib::Headers headers;
  if (!token_.empty()) headers.emplace("Authorization", token_);
  auto res = cli.Post(path, headers, body, "application/json");
  if (!res) return {0, httplib::to_string(res.error())};
  return {res->status, std::move(res->body)};
}

Status EtcdClient::Authenticate(const std::string& host, uint16_t port) {
  token_.clear();
  Reply res = PostTo(host, port, "/v3/auth/authenticate",
                     json{{"name", options_.user}, {"password", options_.password}}.dump());
  if (res.status == 0) return EtcdError("authenticating to " + host + ":" + std::to_string(port) + ": " + res.body);
  json j = json::parse(res.body, nullptr, false);
  if (res.status != 200 || Str(j, "token").empty()) {
    return EtcdError("etcd at " + host + ":" + std::to_string(port) + " refused user '" + options_.user +
                     "': " + res.body.substr(0, 200));
  }
  token_ = Str(j, "token");
  return Status::OK();
}

Result<std::string> EtcdClient::Post(const std::string& path, const std::string& body) {
  MutexLock lock(mu_);
  std::string errors;
  for (size_t tried = 0; tried < options_.endpoints.size(); ++tried) {
    const auto& [host, port] = options_.endpoints[current_];
    Reply res;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!options_.user.empty() && token_.empty()) {
        if (Status st = Authenticate(host, port); !st.ok()) {
          res.body = st.message();
          break;
        }
      }
      res = PostTo(host, port, path, body);
      // A token that expired (or came from another member) is asked for again, once.
      const bool token_refused = res.status != 0 && res.status != 200 && !options_.user.empty() &&
                                 (res.status == 401 || res.body.find("auth") != std::string::npos);
      if (!token_refused) break;
      token_.clear();
    }
    if (res.status == 200) return res.body;
    errors += (errors.empty() ? "" : "; ") + host + ":" + std::to_string(port) + ": " +
              (res.status != 0 ? "HTTP " + std::to_string(res.status) + " " + res.body : res.body);
    current_ = (current_ + 1) % options_.endpoints.size();
  }
  return EtcdError("no etcd endpoint answered " + path + " (" + errors + ")");
}

Result<int64_t> EtcdClient::Grant(int64_t ttl_sec) {
  return Guarded<int64_t>("lease/grant", [&]() -> Result<int64_t> {
    auto r = Post("/v3/lease/grant", json{{"TTL", ttl_sec}}.dump());
    if (!r.ok()) return r.status();
    auto j = Parse(*r);
    if (!j.ok()) return j.status();
    const int64_t id = Int(*j, "ID");
    if (id == 0) return EtcdError("etcd granted no lease: " + *r);
    return id;
  });
}

Result<int64_t> EtcdClient::KeepAlive(int64_t lease) {
  return Guarded<int64_t>("lease/keepalive", [&]() -> Result<int64_t> {
    auto r = Post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump());
    if (!r.ok()) return r.status();
    auto j = Parse(*r);
    if (!j.ok()) return j.status();
    const json& res = j->contains("result") ? (*j)["result"] : *j;
    return Int(res, "TTL");  // absent (0) once the lease is gone
  });
}

Status EtcdClient::Revoke(int64_t lease) {
  auto r = Post("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump());
  if (!r.ok()) return r.status();
  return Parse(*r).status();
}

Result<std::optional<EtcdClient::Kv>> EtcdClient::Get(const std::string& key) {
  return Guarded<std::optional<Kv>>("kv/range", [&]() -> Result<std::optional<Kv>> {
    auto r = Post("/v3/kv/range", json{{"key", Base64Encode(key)}}.dump());
    if (!r.ok()) return r.status();
    auto j = Parse(*r);
    if (!j.ok()) return j.status();
    if (!j->contains("kvs") || (*j)["kvs"].empty()) return std::optional<Kv>();
    auto kv = KvOf((*j)["kvs"][0]);
    if (!kv.ok()) return kv.status();
    return std::optional<Kv>(std::move(*kv));
  });
}

Status EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  json body{{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) body["lease"] = std::to_string(lease);
  auto r = Post("/v3/kv/put", body.dump());
  if (!r.ok()) return r.status();
  return Parse(*r).status();
}

Status EtcdClient::Delete(const std::string& key) {
  auto r = Post("/v3/kv/deleterange", json{{"key", Base64Encode(key)}}.dump());
  if (!r.ok()) return r.status();
  return Parse(*r).status();
}

Result<EtcdClient::Claim> EtcdClient::PutIfAbsent(const std::string& key, const std::string& value, int64_t lease) {
  return Guarded<Claim>("kv/txn", [&]() -> Result<Claim> {
    const std::string k = Base64Encode(key);
    json body{
        {"compare", json::array({{{"key", k}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}}})},
        {"success", json::array({{{"request_put",
                                   {{"key", k}, {"value", Base64Encode(value)}, {"lease", std::to_string(lease)}}}}})},
        {"failure", json::array({{{"request_range", {{"key", k}}}}})}};
    auto r = Post("/v3/kv/txn", body.dump());
    if (!r.ok()) return r.status();
    auto j = Parse(*r);
    if (!j.ok()) return j.status();
    Claim out;
    out.won = (*j)["succeeded"].is_boolean() && (*j)["succeeded"].get<bool>();
    if (out.won) {
      out.current.value = value;
      out.current.lease = lease;
      out.current.create_revision = out.current.mod_revision = Int((*j)["header"], "revision");
      return out;
    }
    const json& responses = (*j)["responses"];
    if (responses.empty() || !responses[0].contains("response_range")) return EtcdError("etcd txn answer: " + *r);
    const json& range = responses[0]["response_range"];
    if (!range.contains("kvs") || range["kvs"].empty()) return out;  // gone meanwhile: try again later
    auto kv = KvOf(range["kvs"][0]);
    if (!kv.ok()) return kv.status();
    out.current = std::move(*kv);
    return out;
  });
}

Result<bool> EtcdClient::PutIfOwned(const std::string& key, int64_t create_revision, const std::string& key2,
                                    const std::string& value) {
  return Guarded<bool>("kv/txn", [&]() -> Result<bool> {
    json body{
        {"compare", json::array({{{"key", Base64Encode(key)},
                                  {"target", "CREATE"},
                                  {"result", "EQUAL"},
                                  {"create_revision", std::to_string(create_revision)}}})},
        {"success", json::array({{{"request_put", {{"key", Base64Encode(key2)}, {"value", Base64Encode(value)}}}}})}};
    auto r = Post("/v3/kv/txn", body.dump());
    if (!r.ok()) return r.status();
    auto j = Parse(*r);
    if (!j.ok()) return j.status();
    return (*j)["succeeded"].is_boolean() && (*j)["succeeded"].get<bool>();
  });
}

}  // namespace yb
