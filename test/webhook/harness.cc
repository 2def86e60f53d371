#include "test/webhook/harness.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace vfio_gpu::webhook::testing {

ScratchDir::ScratchDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "vfio-gpu-webhook.XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Proc Run(const std::vector<std::string>& argv, const std::string& cwd) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  Proc p;
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    p.err = "cannot run " + argv[0];
    return p;
  }
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? p.out : p.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return p;
}

Proc Shell(const std::string& script, const std::string& cwd) {
  return Run({"/bin/sh", "-ec", script}, cwd);
}

static void MustShell(const std::string& script, const std::string& cwd) {
  Proc p = Shell(script, cwd);
  if (p.exit_code != 0) throw std::runtime_error("`" + script + "` failed: " + p.err);
}

void MakeCa(const std::string& dir, const std::string& name) {
  MustShell(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
      " -subj /CN=" +
          name + " -keyout " + name + ".key -out " + name + ".pem",
      dir);
}

void MakeServerCert(const std::string& dir, const std::string& ca, const std::string& name) {
  MustShell("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" +
                std::string(kHost) + " -keyout " + name + ".key -out " + name + ".csr\n" +
                "printf 'subjectAltName=DNS:" + kHost + ",IP:127.0.0.1\\n' > " + name + ".ext\n" +
                "openssl x509 -req -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
                ".key -CAcreateserial -days 2 -extfile " + name + ".ext -out " + name + ".crt",
            dir);
}

Reply Curl(int port, const std::string& ca_file, const std::string& path,
           const std::string& body_file, const std::vector<std::string>& extra) {
  std::string p = std::to_string(port);
  std::vector<std::string> argv = {
      "curl",     "-sS",           "--max-time", "20",
      "--cacert", ca_file,         "--resolve",  std::string(kHost) + ":" + p + ":127.0.0.1",
      "-w",       "\n%{http_code}"};
  if (!body_file.empty()) {
    argv.insert(argv.end(),
                {"-H", "Content-Type: application/json", "--data-binary", "@" + body_file});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("https://" + std::string(kHost) + ":" + p + path);
  Proc r = Run(argv);
  Reply reply;
  reply.curl_exit = r.exit_code;
  reply.err = r.err;
  size_t nl = r.out.rfind('\n');
  if (nl != std::string::npos) {
    reply.body = r.out.substr(0, nl);
    reply.status = std::atoi(r.out.c_str() + nl + 1);
  }
  return reply;
}

std::string FixturePath(const std::string& name) {
  return std::string(WEBHOOK_FIXTURE_DIR) + "/" + name;
}

std::string Fixture(const std::string& name) {
  std::ifstream f(FixturePath(name));
  if (!f) throw std::runtime_error("no fixture " + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Base64Decode(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0;
  unsigned acc = 0;
  for (char c : s) {
    int v = val(c);
    if (v < 0) continue;  // padding
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace vfio_gpu::webhook::testing
