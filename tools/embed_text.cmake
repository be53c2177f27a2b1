# Writes OUTPUT, a header declaring `inline constexpr std::string_view NAME` with the text of INPUT
# (as a raw string literal): built-in web pages.
file(READ "${INPUT}" text)
string(FIND "${text}" ")yb_embed\"" found)
if(NOT found EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds the raw string's delimiter")
endif()
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by tools/embed_text.cmake: edit that file.\n#pragma once\n#include <string_view>\ninline constexpr std::string_view ${NAME} = R\"yb_embed(${text})yb_embed\";\n")
