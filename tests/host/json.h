// A minimal JSON reader for tests (RFC 8259 values; numbers as double, \u escapes below 0x80 only): what the tests
// need to read the files vgpu writes (the timing trace). Throws std::runtime_error on malformed input.
#pragma once
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace hk_host {

struct Json {
  enum class Type { null, boolean, number, string, array, object } type = Type::null;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json& operator[](const std::string& key) const {
    static const Json none;
    auto it = fields.find(key);
    return it == fields.end() ? none : it->second;
  }
  bool has(const std::string& key) const { return fields.count(key) != 0; }

  static Json parse(std::string_view text) {
    size_t i = 0;
    Json v = value(text, i);
    skip(text, i);
    if (i != text.size()) fail(text, i, "trailing characters");
    return v;
  }

 private:
  [[noreturn]] static void fail(std::string_view t, size_t i, const char* what) {
    throw std::runtime_error("json: " + std::string(what) + " at offset " + std::to_string(i) + " near '" +
                             std::string(t.substr(i, 24)) + "'");
  }
  static void skip(std::string_view t, size_t& i) {
    while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i;
  }
  static void expect(std::string_view t, size_t& i, char c) {
    skip(t, i);
    if (i >= t.size() || t[i] != c) fail(t, i, "unexpected character");
    ++i;
  }
  static std::string string(std::string_view t, size_t& i) {
    expect(t, i, '"');
    std::string s;
    while (i < t.size() && t[i] != '"') {
      char c = t[i++];
      if (c == '\\') {
        if (i >= t.size()) fail(t, i, "unterminated escape");
        const char e = t[i++];
        if (e == 'u') {
          if (i + 4 > t.size()) fail(t, i, "short \\u escape");
          c = char(std::strtol(std::string(t.substr(i, 4)).c_str(), nullptr, 16)), i += 4;
        } else {
          c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
        }
      }
      s += c;
    }
    if (i >= t.size()) fail(t, i, "unterminated string");
    ++i;
    return s;
  }
  static Json value(std::string_view t, size_t& i) {
    skip(t, i);
    if (i >= t.size()) fail(t, i, "unexpected end");
    Json v;
    const char c = t[i];
    if (c == '{') {
      v.type = Type::object, ++i;
      skip(t, i);
      if (i < t.size() && t[i] == '}') return ++i, v;
      for (;;) {
        std::string key = string(t, i);
        expect(t, i, ':');
        v.fields[key] = value(t, i);
        skip(t, i);
        if (i < t.size() && t[i] == ',') { ++i; continue; }
        expect(t, i, '}');
        return v;
      }
    }
    if (c == '[') {
      v.type = Type::array, ++i;
      skip(t, i);
      if (i < t.size() && t[i] == ']') return ++i, v;
      for (;;) {
        v.items.push_back(value(t, i));
        skip(t, i);
        if (i < t.size() && t[i] == ',') { ++i; continue; }
        expect(t, i, ']');
        return v;
      }
    }
    if (c == '"') return v.type = Type::string, v.str = string(t, i), v;
    for (auto [word, type, truth] : {std::tuple{"true", Type::boolean, true}, {"false", Type::boolean, false},
                                     {"null", Type::null, false}})
      if (t.substr(i, std::string_view(word).size()) == word)
        return i += std::string_view(word).size(), v.type = type, v.b = truth, v;
    const std::string rest(t.substr(i, 64));
    char* end = nullptr;
    v.num = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) fail(t, i, "not a value");
    i += size_t(end - rest.c_str());
    v.type = Type::number;
    return v;
  }
};

}  // namespace hk_host
