// Precompiled header for the translation units that use Boost.Asio/Beast.
#pragma once
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <simdjson.h>
#include <nlohmann/json.hpp>
