#include "common/toml.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "common/strings.h"

namespace vfio_gpu {

TomlValue::TomlValue() = default;
TomlValue::~TomlValue() = default;
TomlValue::TomlValue(const TomlValue&) = default;
TomlValue::TomlValue(TomlValue&&) noexcept = default;
TomlValue& TomlValue::operator=(const TomlValue&) = default;
TomlValue& TomlValue::operator=(TomlValue&&) noexcept = default;

const TomlValue* TomlValue::Find(std::string_view key) const {
  if (type != Type::kTable) return nullptr;
  for (const auto& [k, v] : table)
    if (k == key) return &v;
  return nullptr;
}

const TomlValue* TomlValue::Find(std::initializer_list<std::string_view> path) const {
  const TomlValue* v = this;
  for (auto key : path) {
    if (!v || !(v = v->Find(key))) return nullptr;
  }
  return v;
}

std::vector<std::string> TomlValue::Strings() const {
  std::vector<std::string> out;
  for (const auto& v : array)
    if (v.type == Type::kString) out.push_back(v.str);
  return out;
}

std::string TomlQuote(std::string_view s) {
  // A JSON string with \uXXXX escapes is also a valid TOML basic string.
  return Quote(s);
}

namespace {

bool IsBareKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

class Parser {
 public:
  Parser(std::string_view text, std::string source) : s_(text), source_(std::move(source)) {}

  Result<TomlValue> Parse() {
    TomlValue root;
    root.defined = true;
    TomlValue* current = &root;
    while (true) {
      SkipSpace();
      if (End()) break;
      char c = s_[p_];
      if (c == '\n' || c == '\r' || c == '#') {
        if (auto e = LineEnd(); !e) return e.error();
        continue;
      }
      if (c == '[') {
        auto t = Header(root);
        if (!t) return t.error();
        current = *t;
      } else {
        if (auto e = KeyValue(*current); !e) return e.error();
      }
      if (auto e = LineEnd(); !e) return e.error();
    }
    return root;
  }

 private:
  bool End() const { return p_ >= s_.size(); }
  char Peek(size_t ahead = 0) const { return p_ + ahead < s_.size() ? s_[p_ + ahead] : '\0'; }
  Error Fail(const std::string& what) const {
    return Error(source_ + ":" + std::to_string(line_) + ": " + what);
  }
  void SkipSpace() {
    while (!End() && (s_[p_] == ' ' || s_[p_] == '\t')) ++p_;
  }
  void SkipComment() {
    if (Peek() == '#')
      while (!End() && s_[p_] != '\n') ++p_;
  }
  // Whitespace, newlines and comments (inside arrays).
  void SkipBlank() {
    while (!End()) {
      SkipSpace();
      SkipComment();
      if (Peek() == '\r' && Peek(1) == '\n') ++p_;
      if (Peek() != '\n') return;
      ++p_;
      ++line_;
    }
  }
  // After a statement: optional spaces and comment, then a newline or the end.
  Status LineEnd() {
    SkipSpace();
    SkipComment();
    if (End()) return Status::Ok();
    if (Peek() == '\r' && Peek(1) == '\n') ++p_;
    if (Peek() != '\n') return Fail("expected the end of the line, found " + Shown());
    ++p_;
    ++line_;
    return Status::Ok();
  }
  std::string Shown() const {
    if (End()) return "the end of the file";
    return "'" + std::string(1, s_[p_]) + "'";
  }

  Result<std::vector<std::string>> Key() {
    std::vector<std::string> parts;
    while (true) {
      SkipSpace();
      char c = Peek();
      if (c == '"' || c == '\'') {
        auto str = String();
        if (!str) return str.error();
        parts.push_back(std::move(*str));
      } else {
        size_t start = p_;
        while (!End() && IsBareKeyChar(s_[p_])) ++p_;
        if (p_ == start) return Fail("expected a key, found " + Shown());
        parts.emplace_back(s_.substr(start, p_ - start));
      }
      SkipSpace();
      if (Peek() != '.') return parts;
      ++p_;
    }
  }

  static std::string Dotted(const std::vector<std::string>& parts, size_t n) {
    std::string out;
    for (size_t i = 0; i < n && i < parts.size(); ++i) {
      if (i) out += '.';
      bool bare = !parts[i].empty();
      for (char c : parts[i]) bare = bare && IsBareKeyChar(c);
      out += bare ? parts[i] : TomlQuote(parts[i]);
    }
    return out;
  }

  static TomlValue* Child(TomlValue& t, const std::string& key) {
    for (auto& [k, v] : t.table)
      if (k == key) return &v;
    return nullptr;
  }
  TomlValue& AddTable(TomlValue& parent, const std::string& key) {
    TomlValue t;
    t.line = line_;
    parent.table.emplace_back(key, std::move(t));
    return parent.table.back().second;
  }

  // Walks (creating implied tables) the first n-1 parts of a path.
  Result<TomlValue*> Walk(TomlValue& from, const std::vector<std::string>& parts) {
    TomlValue* t = &from;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      TomlValue* next = Child(*t, parts[i]);
      if (!next) {
        next = &AddTable(*t, parts[i]);
      } else if (next->table_array && !next->array.empty()) {
        next = &next->array.back();
      } else if (!next->IsTable()) {
        return Fail(Dotted(parts, i + 1) + " is a value (line " + std::to_string(next->line) +
                    "), not a table");
      }
      t = next;
    }
    return t;
  }

  Result<TomlValue*> Header(TomlValue& root) {
    ++p_;
    bool array = Peek() == '[';
    if (array) ++p_;
    auto parts = Key();
    if (!parts) return parts.error();
    if (Peek() != ']' || (array && Peek(1) != ']'))
      return Fail("table header [" + Dotted(*parts, parts->size()) + " is not closed with " +
                  (array ? "]]" : "]"));
    p_ += array ? 2 : 1;
    auto parent = Walk(root, *parts);
    if (!parent) return parent.error();
    const std::string& last = parts->back();
    std::string name = Dotted(*parts, parts->size());
    TomlValue* t = Child(**parent, last);
    if (array) {
      if (!t) {
        TomlValue a;
        a.type = TomlValue::Type::kArray;
        a.table_array = true;
        a.line = line_;
        (*parent)->table.emplace_back(last, std::move(a));
        t = &(*parent)->table.back().second;
      } else if (!t->table_array) {
        return Fail("[[" + name + "]] but " + name + " is already defined (line " +
                    std::to_string(t->line) + ") as something else");
      }
      TomlValue element;
      element.line = line_;
      element.defined = true;
      t->array.push_back(std::move(element));
      return &t->array.back();
    }
    if (!t) {
      t = &AddTable(**parent, last);
    } else if (!t->IsTable() || t->table_array) {
      return Fail("[" + name + "] but " + name + " is already defined (line " +
                  std::to_string(t->line) + ") as a value");
    } else if (t->defined) {
      return Fail("table [" + name + "] is defined twice (first at line " +
                  std::to_string(t->line) + ")");
    }
    t->defined = true;
    t->line = line_;
    return t;
  }

  Status KeyValue(TomlValue& table) {
    int start = line_;
    auto parts = Key();
    if (!parts) return parts.error();
    SkipSpace();
    if (Peek() != '=')
      return Fail("expected '=' after the key " + Dotted(*parts, parts->size()) + ", found " +
                  Shown());
    ++p_;
    SkipSpace();
    auto value = Value();
    if (!value) return value.error();
    auto parent = Walk(table, *parts);
    if (!parent) return parent.error();
    if (TomlValue* old = Child(**parent, parts->back())) {
      return Fail("key " + Dotted(*parts, parts->size()) + " is defined twice (first at line " +
                  std::to_string(old->line) + ")");
    }
    value->line = start;
    value->end_line = line_;
    (*parent)->table.emplace_back(parts->back(), std::move(*value));
    return Status::Ok();
  }

  Result<TomlValue> Value() {
    char c = Peek();
    TomlValue v;
    v.line = line_;
    if (c == '"' || c == '\'') {
      auto str = String();
      if (!str) return str.error();
      v.type = TomlValue::Type::kString;
      v.str = std::move(*str);
      return v;
    }
    if (c == '[' || c == '{') {
      // Arrays and inline tables nest by recursion: bound it, so a hostile or broken file is an
      // error naming its line, not a stack overflow.
      if (depth_ >= kMaxNesting)
        return Fail("arrays and inline tables nested more than " + std::to_string(kMaxNesting) +
                    " deep");
      ++depth_;
      auto nested = c == '[' ? Array() : InlineTable();
      --depth_;
      return nested;
    }
    size_t start = p_;
    while (!End() && (IsBareKeyChar(s_[p_]) || s_[p_] == '.' || s_[p_] == '+' || s_[p_] == ':'))
      ++p_;
    // A date-time may have a space between date and time: "1979-05-27 07:32:00Z".
    if (p_ - start == 10 && Peek() == ' ' && Peek(1) >= '0' && Peek(1) <= '9' &&
        s_[start + 4] == '-') {
      ++p_;
      while (!End() && (IsBareKeyChar(s_[p_]) || s_[p_] == '.' || s_[p_] == '+' || s_[p_] == ':'))
        ++p_;
    }
    std::string tok(s_.substr(start, p_ - start));
    if (tok.empty()) return Fail("expected a value, found " + Shown());
    if (tok == "true" || tok == "false") {
      v.type = TomlValue::Type::kBool;
      v.boolean = tok == "true";
      return v;
    }
    std::string digits;
    for (char ch : tok)
      if (ch != '_') digits += ch;
    int base = 10;
    std::string body = digits;
    if (digits.size() > 2 && digits[0] == '0' &&
        (digits[1] == 'x' || digits[1] == 'o' || digits[1] == 'b')) {
      base = digits[1] == 'x' ? 16 : digits[1] == 'o' ? 8 : 2;
      body = digits.substr(2);
    }
    errno = 0;
    char* endp = nullptr;
    long long n = std::strtoll(body.c_str(), &endp, base);
    if (!body.empty() && *endp == '\0' && errno == 0 && body.find_first_of(" \t") == body.npos) {
      v.type = TomlValue::Type::kInt;
      v.integer = n;
      return v;
    }
    if (base == 10) {
      std::string f = digits;
      if (f == "inf" || f == "+inf" || f == "-inf" || f == "nan" || f == "+nan" || f == "-nan") {
        v.type = TomlValue::Type::kFloat;
        v.real = f.find("nan") != f.npos ? NAN : (f[0] == '-' ? -INFINITY : INFINITY);
        return v;
      }
      double d = std::strtod(f.c_str(), &endp);
      if (*endp == '\0' && f.find_first_of("0123456789") != f.npos &&
          f.find_first_of("xX") == f.npos) {
        v.type = TomlValue::Type::kFloat;
        v.real = d;
        return v;
      }
    }
    if (tok.size() >= 8 && ((tok[4] == '-' && tok[7] == '-') || tok[2] == ':')) {
      v.type = TomlValue::Type::kDatetime;
      v.str = tok;
      return v;
    }
    return Fail("cannot read the value " + tok +
                " (strings need quotes: \"...\"; booleans are true/false)");
  }

  Result<TomlValue> Array() {
    TomlValue v;
    v.type = TomlValue::Type::kArray;
    v.line = line_;
    int open = line_;
    ++p_;
    while (true) {
      SkipBlank();
      if (End()) return Error(source_ + ":" + std::to_string(open) + ": array is never closed");
      if (Peek() == ']') {
        ++p_;
        return v;
      }
      auto element = Value();
      if (!element) return element.error();
      v.array.push_back(std::move(*element));
      SkipBlank();
      if (Peek() == ',') {
        ++p_;
      } else if (Peek() != ']') {
        return End() ? Error(source_ + ":" + std::to_string(open) + ": array is never closed")
                     : Fail("expected ',' or ']' in an array, found " + Shown());
      }
    }
  }

  Result<TomlValue> InlineTable() {
    TomlValue v;
    v.line = line_;
    v.defined = true;
    ++p_;
    SkipSpace();
    if (Peek() == '}') {
      ++p_;
      return v;
    }
    while (true) {
      if (auto e = KeyValue(v); !e) return e.error();
      SkipSpace();
      if (Peek() == '}') {
        ++p_;
        return v;
      }
      if (Peek() != ',') return Fail("expected ',' or '}' in an inline table, found " + Shown());
      ++p_;
    }
  }

  Result<std::string> String() {
    char q = s_[p_];
    bool multi = Peek(1) == q && Peek(2) == q;
    int open = line_;
    p_ += multi ? 3 : 1;
    std::string out;
    if (multi) {  // a newline right after the opening quotes is dropped
      if (Peek() == '\r' && Peek(1) == '\n') ++p_;
      if (Peek() == '\n') {
        ++p_;
        ++line_;
      }
    }
    while (true) {
      if (End()) return Error(source_ + ":" + std::to_string(open) + ": string is never closed");
      char c = s_[p_];
      if (c == q && !multi) {
        ++p_;
        return out;
      }
      if (c == q && Peek(1) == q && Peek(2) == q) {
        // Up to two quotes right before the closing ones belong to the string.
        size_t n = 0;
        while (Peek(n) == q) ++n;
        if (n > 5) return Fail("too many quotes closing a multi-line string");
        out.append(n - 3, q);
        p_ += n;
        return out;
      }
      if (c == '\n') {
        if (!multi) return Fail("string is not closed on its line");
        ++line_;
        out += c;
        ++p_;
        continue;
      }
      if (c == '\\' && q == '"') {
        char e = Peek(1);
        p_ += 2;
        switch (e) {
          case 'b':
            out += '\b';
            break;
          case 't':
            out += '\t';
            break;
          case 'n':
            out += '\n';
            break;
          case 'f':
            out += '\f';
            break;
          case 'r':
            out += '\r';
            break;
          case 'e':
            out += '\x1b';
            break;
          case '"':
            out += '"';
            break;
          case '\\':
            out += '\\';
            break;
          case 'u':
          case 'U': {
            size_t n = e == 'u' ? 4 : 8;
            if (p_ + n > s_.size()) return Fail("short \\" + std::string(1, e) + " escape");
            std::string hex(s_.substr(p_, n));
            char* endp = nullptr;
            unsigned long cp = std::strtoul(hex.c_str(), &endp, 16);
            if (*endp != '\0' || cp > 0x10ffff)
              return Fail("bad escape \\" + std::string(1, e) + hex);
            AppendUtf8(out, static_cast<uint32_t>(cp));
            p_ += n;
            break;
          }
          default: {
            // A line-ending backslash in a multi-line string trims the following whitespace.
            size_t back = p_ - 1;
            p_ = back;
            if (!multi) return Fail("unknown escape \\" + std::string(1, e) + " in a string");
            size_t q2 = p_;
            while (q2 < s_.size() && (s_[q2] == ' ' || s_[q2] == '\t' || s_[q2] == '\r')) ++q2;
            if (q2 >= s_.size() || s_[q2] != '\n')
              return Fail("unknown escape \\" + std::string(1, e) + " in a string");
            p_ = q2;
            while (!End() &&
                   (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\n' || s_[p_] == '\r')) {
              if (s_[p_] == '\n') ++line_;
              ++p_;
            }
          }
        }
        continue;
      }
      out += c;
      ++p_;
    }
  }

  std::string_view s_;
  std::string source_;
  size_t p_ = 0;
  int line_ = 1;
  static constexpr int kMaxNesting = 64;
  int depth_ = 0;
};

}  // namespace

Result<TomlValue> ParseToml(std::string_view text, const std::string& source) {
  return Parser(text, source).Parse();
}

}  // namespace vfio_gpu
